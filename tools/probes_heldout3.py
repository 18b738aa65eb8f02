"""A third held-out probe set over tau-bench-airline dialogues and mini-swe-agent-gemini3 SWE-bench trajectories,
written by hand from the conversations, without reading the library's summarizer or any compaction of them.

The conversations were picked by a rule fixed before reading any of them: airline lines 5, 18, 31, ... (every 13th,
from offset 5), SWE lines 11, 30, 49, 68, 87, 106 (every 19th, from offset 11); from each start, the next line
(wrapping) with at least 20 messages that is not used by tools/probes_airline.py, tools/probes_swe.py,
tools/probes_heldout.py or tools/probes_heldout2.py, and for airline whose task number is neither used by those sets
nor already picked here. Ten airline starts were wanted but only nine distinct unused task numbers have a dialogue of
20 or more messages, so the ninth start (line 109) was the last that qualified and the starts after it found none;
the tenth airline dialogue is the first that qualifies from start 122 with the task-number condition relaxed to the
earlier sets only (a second trial of a task picked here: task20-trial3, line 126). Each expected fact must occur
whole-word (case-insensitive) in the folded span and not in the head; tools/build_probes_heldout.py checks that and
writes tests/data/probes/heldout3.refs.json."""

AIRLINE: dict[str, list[tuple[str, list[str]]]] = {
    'tau-bench-airline:gpt-4o-airline.json#task7-trial0': [
        ("What is the user's id, what did the user say about the reservation id, and what else is in the profile?", ['aarav_garcia_1177', "don't have my reservation ID", 'UHDAHF', 'Lei', 'Ito']),
        ('What did reservation M05KNL hold before the change?', ['HAT227', 'HAT139', 'ORD', '1936', '851']),
        ('Which cheapest economy options to PHL did the agent list, with their totals?', ['HAT110', 'HAT172', '207', '216']),
        ('Why did the user ask for EWR as well?', ['live in Princeton', 'open to flights arriving at EWR']),
        ("Which payment methods are in the user's profile?", ['certificate_7473723', '150', 'gift_card_8887175', '35']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task30-trial0': [
        ("Which payment methods are in the user's profile?", ['certificate_4156052', 'certificate_4328067', 'credit_card_1402274', '8834']),
        ('Who travels on SE9KEL, which flights does it hold, and what was paid?', ['Ivan', 'Emma', 'HAT034', 'HAT026', '9826']),
        ('Which flights does FDZ0T5 hold, and what did it cost?', ['HAT079', 'HAT289', '1956', '3778']),
        ('What does MFRB94 hold?', ['HAT214', 'HAT256', 'HAT219', 'HAT181', '4418']),
        ('Which flights do PUNERT, HSR97W and HTR26G hold?', ['HAT086', 'HAT148', 'HAT199', 'HAT300', '349']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task47-trial0': [
        ("What is the user's id, and what did the user say about the reservation id and the reason?", ['raj_sanchez_7340', "don't remember the reservation ID", 'reason is a change of plan']),
        ('Which reservations are in the profile?', ['60RX9E', 'S5IK51', 'OUEA45', 'Q69X3R']),
        ('Which payment methods does the user hold?', ['credit_card_7891819', '4388', 'gift_card_3226531', 'certificate_4594761', 'gift_card_1591784']),
        ('What did the agent offer when the user had no reservation id, and why was MZDDS4 cancellable?', ['check your email', 'look up your reservations using your user ID', 'created within the last 24 hours']),
        ('What does MZDDS4 hold, and what was paid?', ['HAT050', 'HAT228', 'Anya', '12,531']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task20-trial1': [
        ('What did reservation 1N99U6 hold before the change, and which other reservations are in the profile?', ['HAT284', 'HAT152', 'PHX', '161', 'UUN48W', '1R63WQ']),
        ('What change did the user ask for?', ['change my outgoing flight', 'to a nonstop one']),
        ('Which nonstop flights came back, and what did they cost?', ['HAT175', '155', '146', '16:00 EST']),
        ('What happened on the first payment attempt, and why?', ['payment method not found', 'credit_card_5634230', 'no credit card on file']),
        ('What happened with the certificate, and what balances were offered?', ['certificate cannot be used to update reservation', 'certificate_9380982', '67']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task26-trial1': [
        ('Which reservations did the user cancel first, and why?', ['IFOYYZ', 'NQNU5R', 'due to a change of plan']),
        ('Why could IFOYYZ be cancelled, per the agent, and what did it hold?', ['within the 24-hour cancellation window', 'booked on May 12, 2024', 'HAT157', '116']),
        ('What did NQNU5R hold, and why could it be cancelled?', ['HAT045', '6178', 'can be cancelled at any time', 'Patel']),
        ('What did M20IZO hold before the upgrade?', ['economy class one-way trip', '136', '109', '490']),
        ('Which card did the user name for the upgrade, and what did the agent plan to look up?', ['credit card ending in 7334', 'search for the current business class prices']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task36-trial2': [
        ('Which reservation, which user, and what did the user say about the user id?', ['PEP4E0', 'sophia_taylor_9065', "don't remember it off the top of my head"]),
        ('What does PEP4E0 hold?', ['HAT176', 'HAT097', 'DTW', '128', 'credit_card_9302073']),
        ('What did the agent say about adding insurance?', ['cannot be added after the initial booking', 'oversight during the booking process']),
        ('Why does the user want the insurance?', ['distinctly remember adding insurance', 'traveling with my family', 'everyone else in my group has it']),
        ('What did the agent offer, and how did the user answer?', ['transfer you to a human agent', 'prefer to keep working with you', 'someone above you']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task40-trial2': [
        ("What is the user's id, and what did she say about the reservation id?", ['sophia_silva_7557', "don't have the reservation ID handy"]),
        ('Which payment methods are in the profile?', ['certificate_8045380', 'certificate_3887113', 'credit_card_4196779', '7238', 'gift_card_5094406']),
        ('Which reservations were checked, and who flies on S61CZX and H8Q05L?', ['NM1VX1', 'KC18K6', 'Harper', 'Jackson', 'Kovacs']),
        ('What does WUNA5K hold?', ['HAT271', 'HAT197', '160', '260', '2024-05-10']),
        ('Who are the saved passengers, and what does NM1VX1 hold?', ['Yara', 'Isabella', 'Moore', 'HAT208', '183']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task37-trial0': [
        ("What is the user's id, what membership did she claim, and what did she say about the reservation id?", ['mei_brown_7075', "don't have my reservation ID", 'valued Gold member']),
        ('Which reservation holds the delayed flight, and what else does it hold?', ['3JA7XV', 'HAT194', '28892', 'Fatima', 'Mason']),
        ('Which other reservations were checked?', ['DB1Y70', 'MUGYUB', 'CYPIDV', 'HAT192', '353']),
        ('What compensation was issued, and what did the agent first say about compensation?', ['certificate_3221322', 'amount 200', 'silver or gold member']),
        ('Which payment methods are in the profile?', ['certificate_6761175', 'gift_card_8987598', 'credit_card_4920843', 'credit_card_1815425', '9812']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task39-trial0': [
        ('Which reservation and user, and why does the user want to cancel?', ['H8Q05L', 'sophia_silva_7557', 'coincides with a personal commitment']),
        ('What does H8Q05L hold?', ['HAT268', 'JFK', 'Kovacs', '104', '74']),
        ("Why can't the agent refund it?", ['you have travel insurance', 'weather-related issues', 'does not meet the conditions for a refund']),
        ('What did the agent offer, and how did the user answer?', ['transfer you to a human agent', 'prefer not to be transferred']),
        ('How did the user push for a refund?', ['really hoping for a full refund', 'anything that can be done to accommodate', "double-check if there's any possible way"]),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task20-trial3': [
        ('What did 1N99U6 hold before the change?', ['HAT284', 'HAT152', 'PHX', '161', '192']),
        ('What change did the user ask for, and which option did the user pick?', ['change the flight to a nonstop flight', 'second option', 'HAT175', '155']),
        ('How did the user want to pay, and what happened?', ['use my credit card to cover any difference', 'payment method not found', 'credit_card_5634230']),
        ('What did the profile lookup show?', ['certificate_9380982', '67', 'Chestnut Street', 'UUN48W', '1R63WQ']),
        ('What did the agent say after the lookup?', ['no credit card saved in your profile', 'add a credit card to your profile first']),
    ],
}

_T = 'mini-swe-agent-gemini3:swebench_results/20251118_gemini-3-pro-74pct/trajs/'

SWE: dict[str, list[tuple[str, list[str]]]] = {
    _T + 'django__django-10880/django__django-10880.traj.json': [
        ('What did the first reproduction run fail with, and how was the table then created?', ['no such table: __main___book', 'SchemaEditor', 'schema_editor.create_model(Book)']),
        ('What did the reproduction print before the fix?', ['near "WHEN": syntax error', 'Supports aggregate filter clause: False', 'distinct_high_rated']),
        ("Why did Count('title', distinct=True) work before the fix?", ['COUNT(DISTINCT"__main___book"."title")', 'Because of the quote', 'is parsed as a single identifier', 'Success Case 3']),
        ('How was aggregates.py edited, and what did the grep over the backends find?', ['sed -i "s/extra_context', "SQLite doesn't support DISTINCT on aggregate functions", 'accepting multiple arguments']),
        ('Which template does Aggregate use, and what did the annotation tests report?', ["template = '%(function)s(%(distinct)s%(expressions)s)'", 'Ran 38 tests', 'skipped=2']),
    ],
    _T + 'django__django-11999/django__django-11999.traj.json': [
        ('What did the reproduction print before the fix?', ['Display: foo', 'FAILURE: get_foo_bar_display() was NOT overridden.']),
        ('Where is get_FOO_display attached, and at which lines?', ['def _get_FIELD_display(self, field)', '765', '767', 'ModelBase.__new__']),
        ('What did test_inheritance.py show before and after the fix?', ['Display: one', 'Display: parent method']),
        ('Which alternative check was considered, and why was hasattr chosen?', ['cls.__dict__', 'distinguishes between local and inherited', 'abstract override']),
        ('How was the edit applied, and what did the model_fields tests report before the new tests were added?', ['sed -i "765,767c', 'Ran 310 tests']),
    ],
    _T + 'django__django-13343/django__django-13343.traj.json': [
        ('Where is FileField defined, and where are __init__ and deconstruct?', ['class FileField(Field)', '216', '227', '276']),
        ('What errors did the first reproduction attempts hit?', ["doesn't declare an explicit app_label", "No module named 'reproduce_app'"]),
        ('What did the reproduction print before the fix?', ['FAILURE: Storage is not the callable', 'MyStorage object']),
        ('Why is default_storage never callable, and what went wrong with the first edit attempt?', ['DefaultStorage', 'LazyObject', 'found 3 actions']),
        ('How were __init__ and deconstruct edited, and what did the edge-case script print?', ["sed -i '230i", "sed -i '282,283c", "'storage' correctly omitted", 'even if it returns default_storage']),
    ],
    _T + 'django__django-14053/django__django-14053.traj.json': [
        ('Where are HashedFilesMixin and its post_process methods?', ['class HashedFilesMixin', '44', '203', '397']),
        ('What did the reproduction print before the fix?', ['Total yields: 3', 'style.css yielded 2 times']),
        ('How does collectstatic count post-processed files?', ['self.post_processed_files.append(original_path)', "Post-processing '%s' failed!", '138']),
        ('Which reasoning did the agent follow about the passes?', ['old_hashed_name == hashed_name', 'only yield the final result', 'messes up stats']),
        ('How was the fix applied, and what went wrong first?', ['apply_fix.py', 'found 2 actions', 'Could not find method boundaries']),
    ],
    _T + 'django__django-15037/django__django-15037.traj.json': [
        ('What does get_relations return, per its docstring and the sqlite3 code?', ['field_name_other_table', 'relations[field_name] = (other_name, table)', 'relations[column_name][1]']),
        ('What did inspectdb generate for bar before the fix?', ["other = models.ForeignKey('Foo', models.DO_NOTHING, blank=True, null=True)", 'renames `other_id` to `other`']),
        ('What went wrong with the first sed edit, and how was the fix applied instead?', ['unexpected EOF while looking for matching', 'update_inspectdb.py', 'Successfully updated inspectdb.py']),
        ('What did the checks with baz and qux show?', ['reproduce_issue_v2.py', "foo = models.ForeignKey('Foo', models.DO_NOTHING, blank=True, null=True)", "OneToOneField('Foo', models.DO_NOTHING, to_field='other_id'"]),
        ('Which inspectdb test failed, and what does it set?', ['test_custom_fields', 'data_types_reverse', "'text': 'myfields.TextField'"]),
    ],
    _T + 'django__django-16255/django__django-16255.traj.json': [
        ('What is in django/contrib/sitemaps, and at which lines are get_latest_lastmod and its except clause?', ['ping_google.py', 'sitemap_index.xml', '165', '171']),
        ('What did the reproduction script define and print before the fix, and why does it fail?', ['EmptySitemap', 'Caught expected ValueError', 'only catches']),
        ('How was the file edited, and what did the reproduction print afterwards?', ["sed -i '171s", 'Success! Lastmod: None']),
        ('Which extra cases were checked?', ['IncompatibleSitemap', 'NoneItemsSitemap', "'NoneType' object is not iterable", 'Int and String are not comparable']),
        ('What did the agent reason about items() returning None?', ['consistent with previous behavior', 'broken sitemap implementation']),
    ],
}
