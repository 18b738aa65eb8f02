"""Held-out probes over tau-bench-airline dialogues and mini-swe-agent-gemini3 SWE-bench trajectories, written by
hand from the conversations, without reading the library's summarizer, as a held-out check.

The conversations were picked spread over each file (every 15th airline line, every 12th SWE line, taking the next
one with at least 20 messages whose task is not already used by tools/probes_airline.py or tools/probes_swe.py).
Each expected fact must occur whole-word (case-insensitive) in the folded span; tools/build_probes_heldout.py checks
that and writes tests/data/probes/heldout.refs.json."""

AIRLINE: dict[str, list[tuple[str, list[str]]]] = {
    'tau-bench-airline:gpt-4o-airline.json#task6-trial0': [
        ("What is the user's id, which other reservation is in the profile, and why was the profile looked up?", ['aarav_garcia_1177', 'UHDAHF', "don't have the reservation ID"]),
        ('What was the original itinerary of M05KNL, and what did its first segment cost?', ['HAT227', 'HAT139', 'ORD', '2024-05-23', '1936']),
        ('What change did the user ask for?', ['day after the original reservation', 'prefer the cheapest economy']),
        ('Which LGA to PHL connections came back in the one-stop search for May 24?', ['HAT132', 'HAT206', 'HAT264']),
        ('Which payment methods does the profile hold besides the gift card, and who is the saved passenger?', ['certificate_7473723', 'Lei', 'Ito']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task24-trial0': [
        ('Which reservation does the user want to change, and how was the user id found?', ['HXDUBJ', "don't remember my user ID", 'yara_garcia_1905@gmail.com']),
        ("Which other reservations and payment methods are in the user's profile?", ['DXG8T6', '46BBSE', 'P9VXUO', 'gift_card_1646646', 'certificate_2345996']),
        ('What was the original outgoing itinerary, and how was it paid?', ['HAT085', 'HAT023', '2024-05-18', 'gift_card_6941833', '533']),
        ('What outgoing change did the user ask for, and which flights were offered?', ['nonstop one', 'shift it to the next day', 'after 8 am', 'HAT180', 'HAT072']),
        ('What else did the user add to the change request, and what did the agent reason about the bags?', ['change my ticket to business class', 'Yara is a gold member', 'moving it back one day']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task45-trial0': [
        ("What is the user's id, and how did they identify the reservation?", ['noah_muller_9847', 'my last reservation']),
        ('Which reservations does the profile hold, and what is the one that was looked up?', ['SDZQKO', '4OG6T3', 'BOS', 'LAS']),
        ('Which flights are in reservation 4OG6T3, and in which cabin?', ['HAT006', 'HAT018', 'HAT040', 'HAT253', 'basic_economy']),
        ('Which segment was delayed, and what does the user want?', ['initial flight out of Boston', 'definitely looking for compensation']),
        ('What compensation was issued, and why was the user eligible?', ['certificate_3221322', '$50 certificate', 'gold member and has travel insurance']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task15-trial1': [
        ('What did the agent say about removing Sophia, and what did the user ask for instead?', ['unable to remove a passenger', 'downgrading all passengers to economy']),
        ("What is the user's id, which other reservations were looked up, and which payment method is on file?", ['james_patel_9828', 'AAVMM8', 'MQHHT6', 'gift_card_1642017']),
        ('Which reservation is the LAS to DEN trip, and who are its passengers?', ['GV1N64', 'James Sanchez', 'Sophia Johansson', 'HAT003']),
        ('What went wrong with the downgrade, and what did the user ask about the refund?', ['not enough seats on flight HAT290', 'refund is processed to the original payment method']),
        ('Where do the other two reservations fly?', ['MCO', 'DTW', 'HAT214', 'CLT', 'HAT260']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task28-trial1': [
        ("What is the user's id and the reason for cancelling?", ['amelia_davis_8890', 'release my seat for someone else']),
        ('Which reservations were cancelled first, and what was refunded for each?', ['8C8K4E', 'LU15PA', '5680', '2366']),
        ('Why did the agent not cancel the basic economy reservations, and when were they booked?', ['which is not the case here', 'booked on 2024-05-09', 'booked on 2024-05-06']),
        ('Where do the basic economy reservations fly?', ['HAT134', 'PHX', 'HAT110', 'CLT', 'Fatima']),
        ('What does reservation 8C8K4E hold?', ['HAT247', 'HAT193', 'BOS', 'DEN']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task5-trial2': [
        ("What is the user's id, and which reservations are in the profile?", ['omar_rossi_1241', 'UM3OG5', '5RJ7UH', 'FQ8APE', 'QKRY03']),
        ('Which reservation did the user first name, and what trip does it actually hold?', ['UM3OG5', 'SEA', 'DFW', 'HAT113']),
        ('Why was UM3OG5 not the right reservation?', ['misunderstanding', 'connecting flight to Atlanta']),
        ('What did the user say about the date of the trip?', ['next couple of weeks', "can't recall the exact date"]),
        ('Which certificates and cards are in the profile?', ['certificate_8390038', 'certificate_1778167', 'gift_card_6490722', '3848']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task22-trial2': [
        ("What is the user's id, and which reservations are in the profile?", ['ivan_rossi_8555', 'OWZ4XL', 'F3IQK1', '8WMF4C', 'L2H5FP']),
        ('What is the current itinerary of OWZ4XL, and what was paid for it?', ['HAT202', 'HAT232', 'layover in Miami', '522']),
        ('What did the user offer so that the flight could be changed?', ['willing to upgrade to economy']),
        ('Which nonstop flight was found, and at what times?', ['HAT041', '07:00 AM EST', '12:30 PM EST']),
        ('What pricing mistake did the user point out?', ["wouldn't the new one be lower", '$94 and $80', 'Since the new fare is higher']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task46-trial2': [
        ("What is the user's id, and which saved passenger and card are on file?", ['noah_muller_9847', 'Lei', 'Patel', 'credit_card_7574394']),
        ('What did the user raise before continuing the booking?', ['delayed flight in my most recent reservation']),
        ('Which reservation was looked up, and what does it hold?', ['4OG6T3', 'HAT006', 'HAT253', 'basic_economy']),
        ('Which reservations and certificate were already in the profile?', ['SDZQKO', 'certificate_8301303']),
        ('What compensation was issued?', ['certificate_3221322', '$50 certificate', 'Since you are a gold member']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task14-trial3': [
        ('Which reservation is being changed, and what route does it fly?', ['YAX4DR', 'Boston (BOS)', 'Minneapolis (MSP)', 'MCO']),
        ('What changes did the user ask for, and on what basis?', ['upgrade both passengers to business class', 'under my name', "I'm using my Gold membership"]),
        ('How was the upgrade cost computed, and which other BOS to MCO flights were found?', ['(350 - 122) * 2', 'HAT013', 'HAT145', 'HAT182']),
        ('What did upgrading both passengers cost, and how did the user react?', ['$1,200', 'over my budget']),
        ('What did the user want to know before confirming?', ['need to know the cost of upgrading']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task31-trial3': [
        ('What did the agent say about cancelling only one flight?', ['only cancel the entire reservation']),
        ("What is the user's id, and which reservations are in the profile?", ['mohamed_hernandez_5188', '35V5SM', 'XXDC1M', 'V5EMZH', 'D1EW9B']),
        ('Which reservation is the ATL to JFK flight, and why can it not be cancelled?', ['D1EW9B', 'HAT285', 'beyond the 24-hour window']),
        ('What reason did the user give, and what did they ask about their status?', ['accidentally booked two flights for the same day', "I'm a silver member", 'membership status does not affect']),
        ('What do the other reservations looked up hold?', ['HAT155', 'HAT163', 'HAT084', 'HAT064']),
    ],
}

SWE: dict[str, list[tuple[str, list[str]]]] = {
    'mini-swe-agent-gemini3:swebench_results/20251118_gemini-3-pro-74pct/trajs/astropy__astropy-13236/astropy__astropy-13236.traj.json': [
        ('Which lines of astropy/table/table.py were deleted, and why were the comment lines removed too?', ['1242-1247', 'comments are now misleading']),
        ('Which astropy version is installed, and which bullet of the proposal did that decide?', ['5.2.dev64+g6ed769d58d.d20241024', 'implementing the second bullet point']),
        ('What did the reproduction script print before the change?', ["<class 'astropy.table.ndarray_mixin.NdarrayMixin'>", 'Is instance of Column: False']),
        ('How was serialization of the structured column checked, and with what result?', ['test_serialization.py', 'ECSV write successful', 'FITS read successful']),
        ('Which test broke after the change and where, which failure was there before, and what was planned for the test?', ['astropy/table/tests/test_mixin.py:720', 'test_skycoord_representation', 'lines 720, 728, 736']),
    ],
    'mini-swe-agent-gemini3:swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-10999/django__django-10999.traj.json': [
        ('What did the reproduction print for negative durations before the fix?', ["'-1:-01:00' -> None", "'-1:00:00' -> -1 day, 23:00:00"]),
        ('What did the same cases give after the fix?', ['-1 day, 22:59:00', '9 days, 22:58:59']),
        ('Which mixed-sign cases were added, and what came out?', ['1:-01:01', '0:59:01', '-1 day, 23:01:01']),
        ('Which test modules cover parse_duration, and how many tests ran in each?', ['tests/utils_tests/test_duration.py', 'Ran 12 tests', 'Ran 17 tests']),
        ('What total seconds did the agent compute to check the results?', ['-3660', '-3661', '860339']),
    ],
    'mini-swe-agent-gemini3:swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-11749/django__django-11749.traj.json': [
        ('Where is call_command defined, and which lines build parse_args?', ['line 76', 'lines 135-138']),
        ('What did the first reproduction report?', ['Reproduction successful: CommandError raised.']),
        ('How was the group-collection logic checked before editing, and with what result?', ['test_argparse_logic.py', 'a1 in set: True', 'other in set: False']),
        ('What failed in the subparser test, and why?', ["unexpected keyword argument 'required'", 'Python 3.6.13', 'added in Python 3.7']),
        ('What did the flag tests reveal, and which action types did the agent list as taking no value?', ["ignored explicit argument 'True'", 'WAS ALREADY BROKEN', 'append_const']),
    ],
    'mini-swe-agent-gemini3:swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-12663/django__django-12663.traj.json': [
        ('What error did the reproduction raise, and at which line of fields/__init__.py did int() fail?', ["Field 'id' expected a number but got <SimpleLazyObject: <User: testuser>>", 'line 1772']),
        ('What happened when a real User object was used instead of SimpleLazyObject?', ["Field 'id' expected a number but got <User: testuser>", "not 'User'"]),
        ('What output field did the Subquery resolve to, and what is Col.target?', ['Subquery output_field: auth.User.id', 'Col target type', 'check_output_field.py']),
        ('Why does filtering a ForeignKey by a model instance work while the annotation does not?', ['RelatedLookupMixin', 'get_normalized_value', 'RelatedExact']),
        ('What did filtering User by id=user_instance show, and where is Query.output_field defined?', ["Field 'id' expected a number but got <User: test>", 'self.select[0].field']),
    ],
    'mini-swe-agent-gemini3:swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-13315/django__django-13315.traj.json': [
        ('Where is limit_choices_to applied to the form queryset, and who calls it?', ['Lines 183 and 308', 'BaseModelForm.__init__']),
        ('What class hierarchy leads from ForeignKey to Field?', ['771:class ForeignKey(ForeignObject)', '444:class ForeignObject(RelatedField)']),
        ('What errors did the first reproduction attempts hit?', ['has no filesystem location', 'no such table: reproduce_app_author']),
        ('What did the working reproduction print before the fix?', ["Count of 'Author 1': 2", 'FAIL: Duplicate choices found']),
        ('Which iterator produces the choices, and where are it and ModelChoiceField defined?', ['1149:class ModelChoiceIterator', '1180:class ModelChoiceField(ChoiceField)']),
    ],
    'mini-swe-agent-gemini3:swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-13741/django__django-13741.traj.json': [
        ('Where does clean_password start, and where else is ReadOnlyPasswordHashField used?', ['line 167', 'tests/auth_tests/test_forms.py', 'docs/topics/auth/customizing.txt']),
        ('What broke the first runs of the reproduction script?', ['The SECRET_KEY setting must not be empty', 'SyntaxError: invalid syntax']),
        ('What did the reproduction print before the fix?', ['ReadOnlyPasswordHashField disabled: False', 'UserChangeForm has clean_password: True', 'CustomUserForm accepted new password']),
        ('How was the clean_password method removed?', ["sed -i '167,171d'"]),
        ('What did the reproduction print after the fix?', ['ReadOnlyPasswordHashField disabled: True', 'CustomUserForm preserved initial password (GOOD)']),
    ],
    'mini-swe-agent-gemini3:swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-14351/django__django-14351.traj.json': [
        ('What error did the reproduction produce on SQLite, and which setup errors came first?', ['sub-select returns 2 columns - expected 1', 'no such table: __main___propertygroup', 'already exists']),
        ('Why did inserting the debug prints fail at first, and how were they finally added?', ['SyntaxError: invalid syntax', 'nested quotes in f-string', 'add_debug.py']),
        ('Which attribute checks on QuerySet and Query were run, and what did they show?', ["hasattr(QuerySet, 'as_sql')", "hasattr(QuerySet, 'resolve_expression')", "hasattr(Query, 'get_group_by_cols')"]),
        ('What was the first attempted fix, and did it help?', ["sed -i '93,94c", 'It still fails with the same error']),
        ('Where is QuerySet.resolve_expression, and what error does it raise for multi-field values?', ['1379', 'Cannot use multi-field values as a filter value']),
    ],
    'mini-swe-agent-gemini3:swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-14915/django__django-14915.traj.json': [
        ('Where is ModelChoiceIteratorValue defined?', ['1161:class ModelChoiceIteratorValue']),
        ('What did the reproduction print before the fix?', ['Failed to use as dict key', 'Failed to use in set']),
        ('What did the reproduction print after the fix?', ['Successfully used as dict key', 'Successfully used in set']),
        ('What did the edge-case script print?', ['Hash of val2 (str): 8616059593862133566', 'Correctly raised TypeError for unhashable value', 'All edge cases passed']),
        ('Were there tests naming ModelChoiceIteratorValue, and how many ModelChoiceField tests ran before a test was added?', ['no explicit tests mentioning', 'Ran 23 tests']),
    ],
    'mini-swe-agent-gemini3:swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-15569/django__django-15569.traj.json': [
        ('What did the reproduction print before the fix?', ['Lookups after unregister: True', 'FAIL: Lookup still present in cache after unregister']),
        ('How was the line added, and what did the first check of the edit look like?', ["sed -i '/del cls.class_lookups", 'That output looks wrong']),
        ('What error did the schema test raise after the fix?', ["Cannot resolve keyword 'lower' into field", "Unsupported lookup 'lower'"]),
        ('Where is the register_lookup context manager defined, and what does it call on exit?', ['django/test/utils.py', 'field._unregister_lookup(lookup, lookup_name)']),
        ('At which line is _delete_unique_sql defined, which SQL template does it use when expressions are given, and how did the agent check it could write the test file?', ['1549', 'sql_delete_index', 'touch tests/schema/tests.py']),
    ],
    'mini-swe-agent-gemini3:swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-16263/django__django-16263.traj.json': [
        ('Where are count() and get_aggregation() defined?', ['614:    def count(self)', '438:    def get_aggregation']),
        ('What SQL did the first working reproduction show?', ['SELECT COUNT(*) FROM (SELECT COUNT("reproduce_issue_book_authors"."author_id") AS "num_authors"', 'ISSUE REPRODUCED: Unnecessary JOIN/GROUP BY present.']),
        ('What went wrong with the first fix, and which script showed it?', ['Actual count: 2', 'FAIL: Count is incorrect!', 'verify_wrong_result.py']),
        ('What did the agent learn about how a filter references an annotation, and how was the join dropped?', ['Equal? True', 'same object', 'alias_refcount']),
        ('Which test suites ran after the fix, and what did the annotations suite report?', ['Ran 82 tests', 'OK (skipped=2)', 'Found 116 test(s)']),
    ],
}
