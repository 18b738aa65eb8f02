"""A second held-out probe set over tau-bench-airline dialogues and mini-swe-agent-gemini3 SWE-bench trajectories,
written by hand from the conversations, without reading the library's summarizer, as a second held-out check.

The conversations were picked spread over each file by a rule fixed before reading any of them: every 14th airline
line and every 12th SWE line, both starting at offset 7, taking the next line with at least 20 messages that is not
used by tools/probes_airline.py, tools/probes_swe.py or tools/probes_heldout.py (for airline also skipping a task
number already used there or already picked). Each expected fact must occur whole-word (case-insensitive) in the
folded span and not in the head; tools/build_probes_heldout.py checks that and writes
tests/data/probes/heldout2.refs.json."""

AIRLINE: dict[str, list[tuple[str, list[str]]]] = {
    'tau-bench-airline:gpt-4o-airline.json#task11-trial0': [
        ("What is the user's id, and which existing reservation (route, other passenger) was the template?", ['ivan_muller_7015', 'G72NSF', 'DTW', 'Isabella', 'Moore']),
        ('Which flights does that reservation hold, and what did each cost there?', ['HAT097', 'HAT251', '158', '141']),
        ('Which payment did the user want to use, and what did the agent quote first?', ['use my certificate', 'certificate_8998287', '329', '171']),
        ('What did the user drop from the booking, and what was the revised quote?', ["don't need insurance or baggage", '299', '201']),
        ('What happened on the first booking attempt?', ['payment amount does not add up', 'total price is 375', '375 - 299']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task32-trial0': [
        ('Which earlier reservation matched the May 10 trip, and what did it hold?', ['WUNA5K', 'HAT271', 'HAT197', '2024-05-11', 'round_trip']),
        ('How did the user change the request after the agent proposed a round trip?', ['only need a one-way ticket', 'Kevin Smith', 'April 12, 2001', "total cost doesn't exceed $500"]),
        ('Which direct ORD to PHL flights came back for May 26, with their economy prices?', ['HAT139', 'HAT289', '114', '161', '174']),
        ('What did the agent quote first, and why did that booking fail?', ['228', 'not enough seats on flight HAT139']),
        ("What else is in the user's profile (payment methods, other reservations)?", ['certificate_8045380', 'certificate_3887113', 'NM1VX1', 'KC18K6', 'H8Q05L']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task1-trial1': [
        ("What is the user's id, and which reservations are in the profile?", ['olivia_gonzalez_2305', 'K67C4W', 'THY2DG', 'Z7GOZK']),
        ('What did the user say about the reservation id?', ["not sure which one it is"]),
        ('What does reservation K67C4W hold?', ['LAS', 'MCO', 'HAT137', '342', 'Johansson']),
        ('What does reservation THY2DG hold?', ['MSP', 'HAT248', 'HAT119', 'Martin', '338']),
        ('Which reservation holds the Texas to Newark return, and why could it not be changed?', ['Z7GOZK', 'IAH', 'which cannot be modified']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task19-trial1': [
        ('Which reservation is being changed, and what was its original itinerary?', ['VA5SGQ', 'HAT035', 'HAT066', 'HAT002', 'HAT106']),
        ('What change did the user ask for?', ['nonstop options from DTW to JFK', 'same dates']),
        ('Which return flights JFK to DTW on May 20 came back from the search?', ['HAT033', 'HAT088', 'HAT092', 'HAT212']),
        ('Which outbound options were offered, and what did the user pick and why?', ['HAT169', 'HAT263', 'HAT240', 'morning flights', '325']),
        ('What did the user ask about fees, and what did the flight update return?', ['change fees are waived', 'credit_card_8003957', '331']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task34-trial1': [
        ('What did the user say about the booking conditions of the two reservations?', ['more than 24 hours ago', 'not business class']),
        ('What does reservation XEHM4B hold, and why could it not be cancelled as is?', ['HAT005', 'HAT178', 'Omar', '296', 'Basic Economy ticket without travel insurance']),
        ('Why can 59XX6W be cancelled?', ['can be canceled because it has travel insurance', 'HAT007', 'HAT174']),
        ('What did the user ask for XEHM4B, and what did the upgrade cost?', ['Upgrade XEHM4B to economy', '166', '126', '288', 'ending in 2135']),
        ('What do the other reservations in the profile hold?', ['7WPL39', 'HAT246', '3EMQJ6', 'HAT223', 'A90KR2', 'HAT170']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task10-trial2': [
        ('Why could the agent neither remove Ethan nor cancel H9ZU1C?', ['cannot remove a passenger', 'beyond the 24-hour cancellation window', 'does not have travel insurance']),
        ('What does reservation H9ZU1C hold?', ['HAT192', 'HAT166', 'James', 'Amelia', '897']),
        ('What new trip did the user ask for?', ['cheapest direct round-trip', 'EWR or JFK', 'West Coast city', 'prefer basic economy']),
        ('Which flights did the searches find, and what total did the agent quote?', ['HAT041', 'HAT012', 'HAT228', '163']),
        ("What payment preference did the user give, and which gift cards are in the profile?", ['smaller one is applied first', 'gift_card_7773485', '203', 'without the travel insurance']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task27-trial2': [
        ('Which reservations did the user want cancelled, and why?', ['IFOYYZ', 'NQNU5R', 'there has been a change of plan']),
        ('What does reservation IFOYYZ hold?', ['aarav_ahmed_6699', 'CLT', 'HAT157', 'HAT215', '116']),
        ('Why could IFOYYZ not be cancelled?', ['basic economy round-trip flight without travel insurance', 'booked more than 24 hours ago']),
        ('What does NQNU5R hold, and why could it be cancelled?', ['business class one-way flight', 'can be canceled at any time', 'HAT214', 'Patel']),
        ('What did the cancellation of NQNU5R return?', ['-6178', 'successfully canceled', 'credit_card_4959530']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task4-trial3': [
        ("What is the user's id, and which other reservations were looked up?", ['omar_rossi_1241', 'UM3OG5', 'HAT113', '5RJ7UH', 'QKRY03']),
        ('Which reservation is the New York to Chicago trip, and why could its passenger not be changed?', ['FQ8APE', 'cannot be modified to change passengers', 'HAT056', 'HAT138']),
        ('What did the user ask for instead?', ['upgrade to economy class', 'add 3 checked bags']),
        ('What did the upgrade and the bags cost, and how were they paid?', ['209', 'credit_card_7407366', 'ending in 6437']),
        ('Which certificates and gift cards are in the profile?', ['certificate_8390038', 'certificate_1778167', 'gift_card_8190333', 'gift_card_6490722']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task16-trial3': [
        ('What did the agent say about the cause of the delay?', ["don't have access to specific information about the cause"]),
        ("What is the user's id, and why was it needed?", ['ethan_martin_2396', 'off the top of my head']),
        ("Which certificates and card are in the user's profile?", ['certificate_5449394', 'certificate_7365778', 'certificate_2942955', 'credit_card_5447957']),
        ('Which business-class reservations does the user hold?', ['DQST39', 'BSSSM3', 'NTIRXF', '5706']),
        ('Which other reservations were checked before the delayed one was found?', ['GXWCPN', 'RVQC22', 'P824NH', '3HE6QG', 'HG8X9P']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task29-trial3': [
        ("What is the user's id, and why does she want to cancel?", ['amelia_davis_8890', 'make my seat available', 'may need it more']),
        ('Which reservations are in the profile?', ['8C8K4E', 'XAZ3C0', 'LU15PA', 'MSJ4OA', 'I6M8JQ']),
        ('Which reservations did the user want cancelled?', ['only have one passenger']),
        ('What does reservation 8C8K4E hold?', ['BOS', 'DEN', 'HAT247', 'HAT193', '5680']),
        ('Who are the passengers of MSJ4OA and I6M8JQ?', ['Anya', 'Brown', 'Mei', 'Wilson', 'Juan', 'Sanchez']),
    ],
}

_T = 'mini-swe-agent-gemini3:swebench_results/20251118_gemini-3-pro-74pct/trajs/'

SWE: dict[str, list[tuple[str, list[str]]]] = {
    _T + 'astropy__astropy-14995/astropy__astropy-14995.traj.json': [
        ('Where is NDDataRef defined, and where does the arithmetic live?', ['nddata_withmixins.py', 'class NDArithmeticMixin', 'astropy/nddata/mixins/ndarithmetic.py']),
        ('What did the reproduction script show before the fix?', ['reproduce_issue.py', 'Tests 3 and 5 fail']),
        ('At which lines are _arithmetic, _arithmetic_data and _arithmetic_mask defined?', ['166', '354', '485']),
        ('Why does the mask * no-mask case fail?', ['handle_mask(self.mask, operand.mask, **kwds)', 'falls through to']),
        ('How was the fix inserted, and what went wrong just before?', ["sed -i '523i", 'found 2 actions']),
    ],
    _T + 'django__django-11211/django__django-11211.traj.json': [
        ('Which errors did the first reproduction attempts hit?', ['settings are not configured', "No module named 'reproduce_app'", 'no such table: reproduce_app_foo']),
        ('How was the reproduction finally made to work, and what did it print?', ['reproduce_app/models.py', 'makemigrations', 'With prefetch: None']),
        ('Which method builds the prefetch key, and where?', ['get_prefetch_queryset', '171', 'gfk_key']),
        ('Why do the keys not match? (which prep method, where defined)', ['Field.get_prep_value', '771', 'class UUIDField', '2309']),
        ('What edit was made, and what did the contenttypes tests report?', ['model._meta.pk.to_python(getattr(obj, self.fk_field))', 'Ran 59 tests']),
    ],
    _T + 'django__django-12050/django__django-12050.traj.json': [
        ('Where is resolve_lookup_value, and which line coerces the value?', ['django/db/models/sql/query.py', '1053', '1076']),
        ('What did the reproduction script hit first, and what did it print?', ["doesn't declare an explicit app_label", 'FAIL: Input type does not match resolved type']),
        ('What was the first fix?', ['value = type(value)(resolved_values)', "sed -i '1076s"]),
        ('Why was the first fix not kept?', ['namedtuple', 'missing 1 required positional argument', '_make']),
        ('How was the indentation of the final edit checked?', ['cat -A', '20 spaces']),
    ],
    _T + 'django__django-13121/django__django-13121.traj.json': [
        ('What did the reproduction script fail with?', ["No module named 'reproduce_app'", 'unsupported type for timedelta microseconds component', 'line 583']),
        ('What raw values did the debug script see in convert_durationfield_value?', ['reproduce_issue_debug.py', '3600000000', "value='1:00:01'"]),
        ('Why does SQLite return a string for duration arithmetic?', ['django_format_dtdelta', '_sqlite_format_dtdelta', 'str(out)', '226']),
        ('What did the parse_duration check show?', ['test_parse.py', '1 day, 10:17:36']),
        ('How was the parse_duration import added, and what mistake came right before?', ["sed -i '12i", 'found 2 actions']),
    ],
    _T + 'django__django-13513/django__django-13513.traj.json': [
        ('What did the agent find in explicit_or_implicit_cause at the start?', ['398', 'code already has', 'SUCCESS: Cause is None']),
        ('What did git log show for django/views/debug.py?', ['11ebc6479ffda87376b60c9475d33d8120f86368', 'Jon Dufresne', '31791']),
        ('What broke when the debug print was injected, and how was it fixed?', ['SyntaxError: invalid syntax', 'line 399', "sed -i '399d'"]),
        ('What did the DEBUG output show for the ValueError?', ['cause=None suppress=True', 'Total frames: 1']),
        ('How did the agent confirm the bug, and with what result?', ['reverting the code', 'Total frames: 2', 'exc_cause: my error']),
    ],
    _T + 'django__django-14011/django__django-14011.traj.json': [
        ('Where are LiveServerThread and ThreadedWSGIServer defined?', ['1476', 'server_class = ThreadedWSGIServer', 'django/core/servers/basehttp.py']),
        ('What did the first reproduction check, and what did it report?', ['test_reproduce.db', 'CONN_MAX_AGE', 'Database file is NOT locked']),
        ('How did the second reproduction look for leaks, and what did it find?', ['/proc/self/fd', 'Initial FDs: 9', 'No FD leak detected']),
        ('Why might a thread-local connection stay open?', ['__del__', 'django/db/backends/base/base.py', 'not deterministic']),
        ('How was the fix applied, and what method does it override?', ['modify_server.py', 'newlines can be tricky', 'process_request_thread']),
    ],
    _T + 'django__django-14725/django__django-14725.traj.json': [
        ('Where are modelformset_factory, formset_factory and total_form_count?', ['872', 'django/forms/formsets.py', '478', '142']),
        ('What errors did the reproduction hit, and what did it show once working?', ["No module named 'reproduce_app'", 'no such table: reproduce_app_book', 'Books count: 2']),
        ('Why is extra=0 not enough to stop new objects?', ['management_form.cleaned_data[TOTAL_FORM_COUNT]', 'absolute_max']),
        ('Which edits added the can_create flag?', ["sed -i '570a", 'can_create = True', "sed -i '816a", "sed -i '901a"]),
        ('How was edit_only passed through inlineformset_factory, and why was the default reconsidered?', ['1119', "sed -i '1117a", "overrides the user's intention"]),
    ],
    _T + 'django__django-15278/django__django-15278.traj.json': [
        ('What did the reproduction need, and what did it print?', ["No module named 'repro_app'", 'mkdir -p repro_app', 'Failed: Cannot add a UNIQUE column']),
        ('Where in the traceback did the failing call come from?', ['line 333', 'line 532']),
        ('Why is the new field unique?', ["kwargs['unique'] = True", 'return self._unique or self.primary_key']),
        ('What went wrong with the first edit?', ["sed -i '330,332c", 'schema.py.new', 'found 3 actions']),
        ('What did add_field look like before the fix?', ['if not field.null or self.effective_default(field) is not None:', '325']),
    ],
    _T + 'django__django-16082/django__django-16082.traj.json': [
        ('Where is Mod defined, and which mixins does it use?', ['django/db/models/functions/math.py', 'NumericOutputFieldMixin', 'FixDecimalInputMixin']),
        ('What did checking the Mod function show?', ['no such table: __main___number', 'Mod(Integer+Integer, Decimal)']),
        ('What reproduced the bug?', ["Cannot infer type of '%%' expression", "F('decimal') % F('integer')"]),
        ('Where are the combinator helpers in expressions.py?', ['600', '622', '631', '_resolve_combined_type']),
        ('What edit was made, and what did the check print afterwards?', ["sed -i '/Combinable.DIV,/a", 'Decimal % Integer output field']),
    ],
    _T + 'django__django-16631/django__django-16631.traj.json': [
        ('Where are salted_hmac and get_session_auth_hash, and what secret does salted_hmac default to?', ['django/utils/crypto.py', 'if secret is None', 'django/contrib/auth/base_user.py']),
        ('Where else is SECRET_KEY_FALLBACKS used?', ['django/core/signing.py', 'django/contrib/auth/tokens.py', 'PasswordResetTokenGenerator']),
        ('What did the reproduction show before the fix?', ['b51938f5403dc2c8bc58f6373ea36570201bd27d2743400889595dd6b198037d', 'FAILURE: User is logged out']),
        ('How were the two files edited?', ['135', "sed -i '144a", 'verify_session_auth_hash', "sed -i '200,205d'"]),
        ('What did the reproduction show after the fix, and what did the custom user test fail with?', ['SUCCESS: User is still logged in', "AUTH_USER_MODEL refers to model 'test_app.CustomUser' that has not been installed"]),
    ],
}
