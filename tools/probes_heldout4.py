"""A fourth held-out probe set over tau-bench-airline dialogues and mini-swe-agent-gemini3 SWE-bench trajectories,
written by hand from the conversations by a helper session, without reading the library's summarizer or any
compaction of them.

The conversations were picked by a rule fixed before reading any of them. A conversation is used if its source is in
tools/probes_airline.py, tools/probes_swe.py, tools/probes_heldout.py, tools/probes_heldout2.py or
tools/probes_heldout3.py. Airline: starts at lines 3, 28, 53, 78, 103, 128 (every 25th, from offset 3); from each
start, the first line at or after it (wrapping) whose dialogue has at least 20 messages, is not used and is not
already picked here. SWE: starts at lines 4, 16, 28, ..., 112 (every 12th, from offset 4); from each start, the first
line at or after it (wrapping) with at least 30 messages, not used and not already picked (0-based line numbers).

Picked, airline (tau-bench-airline/conversations.jsonl): lines 10 (task14-trial0), 28 (task40-trial0),
54 (task22-trial1), 81 (task11-trial2), 112 (task2-trial3), 128 (task22-trial3). Nearly every task number is used by
an earlier set, so there is no task-number condition here: all six are other trials of tasks an earlier set used
(task14-trial3, task40-trial2, task22-trial2, task11-trial0, task2-trial1), and task22 is picked twice (trials 1
and 3).
Picked, SWE (mini-swe-agent-gemini3/conversations.jsonl): lines 4 (astropy-14309), 17 (django-11149),
29 (django-11951), 40 (django-13033), 52 (django-13406), 64 (django-13820), 76 (django-14559), 88 (django-15098),
100 (django-15916), 112 (django-16493).

Each expected fact must occur whole-word (case-insensitive) in the folded span and not in the head;
tools/build_probes_heldout.py checks that and writes tests/data/probes/heldout4.refs.json."""

AIRLINE: dict[str, list[tuple[str, list[str]]]] = {
    'tau-bench-airline:gpt-4o-airline.json#task14-trial0': [
        ("What are the user's id and reservation, and what does the reservation hold?", ['chen_lee_6825', 'YAX4DR', 'HAT235', 'HAT298', 'MCO']),
        ('Who travels on YAX4DR, and what was paid for it?', ['Noah', 'Hernandez', '1968-01-06', 'credit_card_4938634', '498']),
        ('What did the user ask for, and what budget and fallback did the user set?', ['upgrade the class to business', 'add 2 checked bags', 'willing to pay up to $600', 'just Noah Hernandez']),
        ('Which business prices did the flight searches return?', ['HAT013', '338', 'HAT182', '226', '499']),
        ('What did the agent compute for the upgrade, and what did it tell the user?', ['1200', 'exceeds your budget of $600', 'upgrading just one passenger', 'exactly $600']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task40-trial0': [
        ("What is the user's id, what did she say about the reservation id, and what membership does the profile show?", ['sophia_silva_7557', "don't have the reservation ID with me", '"membership": "regular"']),
        ('Which payment methods are in the profile?', ['certificate_8045380', 'certificate_3887113', 'credit_card_4196779', '7238', 'gift_card_5094406']),
        ('What do NM1VX1 and KC18K6 hold?', ['HAT300', 'HAT208', 'HAT215', '183', '136']),
        ('What does S61CZX hold, and who flies on it and on H8Q05L?', ['HAT228', 'HAT043', '667', 'Harper', 'Kovacs']),
        ('What does WUNA5K hold?', ['WUNA5K', 'HAT271', 'HAT197', '2024-05-10', '260']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task22-trial1': [
        ("What is the user's id, what did he say about the reservation id, and which reservations are in the profile?", ['ivan_rossi_8555', "don't remember my reservation ID", 'OWZ4XL', 'F3IQK1', 'L2H5FP']),
        ('Which payment methods are in the profile?', ['gift_card_7344518', '183', 'gift_card_9823297', '224', 'credit_card_9659780']),
        ('What does OWZ4XL hold, and who travels on it?', ['HAT202', 'HAT232', 'Santos', 'Johansson', '522']),
        ('Why could the reservation not be changed, and what did the user offer?', ['it cannot be modified', 'upgrading to economy would allow me', 'proceed with the upgrade to economy']),
        ('What did the searches return, and what budget did the user give?', ['HAT041', '136', '458', 'up to $100', 'only available nonstop flight']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task11-trial2': [
        ("What is the user's id, what did the user say about the reservation id, and which reservation is in the profile?", ['ivan_muller_7015', "don't remember the reservation ID", 'G72NSF']),
        ('What does G72NSF hold?', ['HAT097', 'HAT251', '158', '141', '658']),
        ('Which payment methods and saved passengers are in the profile?', ['certificate_8998287', 'credit_card_3563913', '6710', 'gift_card_8516878', '1986-03-14']),
        ("What did the user say about the friend's details, insurance and the certificate?", ["don't remember his date of birth", "don't want to include insurance or baggage", 'how much will be left on the certificate', '201']),
        ('What happened when the agent tried to book?', ['payment amount does not add up', 'total price is 375, but paid 299', 'error in the booking process']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task2-trial3': [
        ("What is the user's id, what did he say about the reservation ids, and which reservations are in the profile?", ['omar_davis_3817', 'not sure about the reservation IDs', 'X7BYG1', 'EQ1G6C', 'BOH180']),
        ('Which payment methods are in the profile?', ['gift_card_3481935', 'credit_card_2929732', '7803', 'credit_card_9525117', 'gift_card_6847880']),
        ('What does JG7FMM hold, and what was paid?', ['HAT028', 'HAT277', '1859', 'Fatima', '7136']),
        ('What do 2FBBAH and LQ940Q hold?', ['HAT080', 'HAT255', '4420', 'HAT294', '533']),
        ('What did the user ask once the business reservations were listed, and which other flights did the searches return?', ['downgrade both of these reservations', "how much I'll be saving in total", 'HAT017', 'HAT158', 'HAT193']),
    ],
    'tau-bench-airline:gpt-4o-airline.json#task22-trial3': [
        ('What did the user say when asked for the user id and reservation id?', ["don't have those with me right now", 'another way to find my booking', "see if I can find them"]),
        ('What did the agent say when the user had no ids?', ['need the user ID and reservation ID to access and modify', 'try to locate this information', 'contact a human agent for additional support']),
        ('Which route and date did the user ask about, and what did the search return?', ['ORD', '2024-05-21', 'no nonstop flights available from EWR to ORD']),
        ('What did the user ask about a waitlist, and what did the agent answer?', ['waitlist I can join', 'unable to manage waitlists', 'contact a human agent or the airline directly']),
        ('What did the user ask for next, and what was the user willing to do?', ['rebook to an earlier flight', 'even if it has a stop', 'willing to pay a fee']),
    ],
}

_T = 'mini-swe-agent-gemini3:swebench_results/20251118_gemini-3-pro-74pct/trajs/'

SWE: dict[str, list[tuple[str, list[str]]]] = {
    _T + 'astropy__astropy-14309/astropy__astropy-14309.traj.json': [
        ('What did the first reproduction print before the fix, and what did the search for identify_format find?', ['reproduce_issue.py', 'Caught expected error: tuple index out of range', 'def identify_format(self, origin, data_class_required, path, fileobj, args, kwargs)', 'astropy/io/registry/tests/test_registries.py']),
        ('Which write path did the agent trace, and what went wrong with the first edit attempt?', ['UnifiedOutputRegistry', '_get_valid_format', 'found 2 actions']),
        ('How was is_fits fixed, and what did the checks print afterwards?', ["sed -i '72s", 'len(args) > 0 and isinstance(args[0]', 'No error raised', 'Test 4: Empty args', 'All tests passed']),
        ('Which other identifiers had the same bug, and where?', ['astropy/io/votable/connect.py', 'astropy/io/misc/hdf5.py', 'def is_hdf5', 'isinstance(args[0], (VOTableFile, VOTable))']),
        ('What did the votable check print, and why could the HDF5 fix not be tested?', ['reproduce_votable_issue.py', "No module named 'h5py'", 'cannot test the fix for HDF5']),
    ],
    _T + 'django__django-11149/django__django-11149.traj.json': [
        ('What errors did the first reproduction attempts hit?', ['settings are not configured', 'has no filesystem location', 'Permission matching query does not exist', 'no such table: reproduce_app_report']),
        ('How was the missing table fixed, and what did the reproduction print before any fix?', ["call_command('makemigrations', 'reproduce_app', verbosity=0)", 'has_add_permission: True', 'FAIL: User with view-only permission has edit permissions on inline.']),
        ('Where are InlineModelAdmin, BaseModelAdmin and ModelAdmin in options.py?', ['1960', 'class BaseModelAdmin', '99', '538']),
        ('Where are the inline permission methods, and what do they return for auto-created models?', ['2114', '2123', '2132', 'return self.has_view_permission(request, obj)', 'self.opts.auto_created']),
        ('What did the agent conclude about the bug, and where is InlineModelAdmin.has_view_permission?', ['grants edit permissions based on view permissions', '2141', 'field.remote_field.model != self.parent_model']),
    ],
    _T + 'django__django-11951/django__django-11951.traj.json': [
        ('Where are bulk_create and _batched_insert, and which line computes the batch size?', ['438', '1205', '1212', 'batch_size = (batch_size or max(ops.bulk_batch_size(fields, objs), 1))']),
        ("What does SQLite's bulk_batch_size return, and what batch size did the agent expect for two fields?", ['SQLITE_LIMIT_VARIABLE_NUMBER', 'max_query_params // len(fields)', '499', 'return 500']),
        ('What did the reproduction print before the fix?', ['Attempting bulk_create with batch_size=600', 'too many terms in compound SELECT']),
        ('Why did the reproduction fail after the fix, and how was the table then created?', ['no such table: __main___mymodel', 'No migrations to apply', 'schema_editor.create_model(MyModel)']),
        ('How was the fix applied, and how did the agent check that the reproduction was valid?', ["sed -i '1212c", 'max_batch_size = max(ops.bulk_batch_size(fields, objs), 1)', 'SUCCESS: bulk_create succeeded', "sed -i '1212,1213c", 'found 4 actions']),
    ],
    _T + 'django__django-13033/django__django-13033.traj.json': [
        ('What did the reproduction print for the two orderings before the fix?', ['LEFT OUTER JOIN "__main___onemodel" T3', 'working query (record__root__id)', 'ORDER BY "__main___onemodel"."root_id" ASC']),
        ('Where is ordering resolved, and at which lines?', ['get_order_by', '271', 'find_ordering_name', '715', '1424']),
        ('What did check_field.py show?', ['check_field.py', 'Same object? True', 'Attname: root_id']),
        ('What did the agent find wrong in find_ordering_name, and how was it changed?', ["getattr(field, 'attname', None) != name", 'full path', 'last component', '729', "getattr(field, 'attname', None) != pieces[-1]"]),
        ('Which edge cases and test suites were run, with what results, and which test was added?', ['ORDER BY "__main___child"."age" ASC', 'Ran 423 tests', 'skipped=13', 'test_order_by_fk_attname']),
    ],
    _T + 'django__django-13406/django__django-13406.traj.json': [
        ('Where was the reproduction put, and what did it print before the fix?', ['tests/queryset_pickle/test_reproduce.py', "Type of first item: <class 'queryset_pickle.models.Toy'>", 'is not an instance of']),
        ('Where are set_values, QuerySet.__getstate__, ValuesIterable and the query setter?', ['2180', '238', 'class ValuesIterable(BaseIterable)', '211']),
        ('What did the agent find about QuerySet.query and what a values() query stores?', ['@query.setter', 'values_select', "values_select: ('material',)"]),
        ('How was the setter changed?', ["sed -i '211,213c", 'if value.values_select and self._iterable_class is ModelIterable', 'self._iterable_class = ValuesIterable']),
        ('What did the tests print after the fix, including the values_list case?', ["Type of first item: <class 'dict'>", "{'material': 'plastic', 'total_price': 20}", "values_list result: {'name': 'foo'}", 'test_values_list_reproduce']),
    ],
    _T + 'django__django-13820/django__django-13820.traj.json': [
        ('Where is the namespace check in the migration loader, and what follows it?', ['93', "if getattr(module, '__file__', None) is None:", "if not hasattr(module, '__path__'):", '97']),
        ('How did the reproduction simulate the three cases?', ['NamespacePath', 'frozen_module.__path__ = []', 'mock_import_module', 'MigrationLoader(connection=None, load=False)']),
        ('What did the first run of the reproduction fail with, and why?', ["No installed app with label 'namespace_app'", "KeyError: 'namespace_app'", 'apps.get_app_config']),
        ('What did the reproduction print before and after the fix?', ['FAIL: frozen_app NOT loaded (Expected failure before fix)', "Unmigrated apps: {'frozen_app', 'namespace_app'}", 'PASS: frozen_app loaded', "Migrated apps: {'regular_app', 'frozen_app'}"]),
        ('How was line 93 changed, and what did the loader tests report?', ["not isinstance(getattr(module, '__path__', None), list)", 'migrations.test_loader', 'Ran 25 tests', 'test_migrations_namespace_package']),
    ],
    _T + 'django__django-14559/django__django-14559.traj.json': [
        ('Where is bulk_update, and which lines call update() per batch and return early?', ['527', '568', 'self.filter(pk__in=pks).update(**update_kwargs)', '544']),
        ('Which bulk_update tests exist?', ['tests/queries/test_bulk_update.py', 'tests/postgres_tests/test_bulk_update.py', 'BulkUpdateNoteTests']),
        ('What did the first reproduction run fail with, and what did it print once the table was made?', ['no such table: __main___mymodel', 'schema_editor.create_model(MyModel)', 'bulk_update returned: None', 'Issue reproduced']),
        ('How was query.py edited?', ["sed -i '544s/return/return 0/'", 'patch_bulk_update.py', 'rows_updated += self.filter(pk__in=pks).update(**update_kwargs)', 'return rows_updated']),
        ('What did the fixed reproduction and the edge-case script print, and what was tested next?', ['bulk_update returned: 5', 'bulk_update(objs, batch_size=4) returned: 15', 'bulk_update([]) returned: 0', 'test_non_existent.py', 'pk=999']),
    ],
    _T + 'django__django-15098/django__django-15098.traj.json': [
        ('Where is LocalePrefixPattern, and how does it match a path?', ['django/urls/resolvers.py', '305', 'path.startswith(language_prefix)', "return '%s/' % language_code"]),
        ('Which regex did the agent blame, where, and why does it fail for en-latn-us?', [r"r'^/(\w+([@-]\w+)?)(/|$)'", '46', 'only supports one hyphen']),
        ('What did the reproduction print before and after the fix?', ['Path: /en-latn-us/, Language: None', 'Path: /en-Latn-US/, Language: en-Latn-US', 'Path: /foo-bar-baz/, Language: None']),
        ('How was the regex edited, and what did the i18n test run report?', ["sed -i '46s/?/*/'", 'Ran 214 tests', 'failures=2, errors=1', 'test_get_language_from_path_real', "'de' is not None"]),
        ('Which test assertion broke and why, and what did test_design.py show?', ["self.assertIsNone(g('/de-simple-page/'))", '1611', "['de-simple-page', 'de-simple', 'de']", 'Path: /de-sign/, Language: de']),
    ],
    _T + 'django__django-15916/django__django-15916.traj.json': [
        ('What did the first reproduction print, and what did the agent suspect about MyForm?', ['reproduction_script.py', "Field 'active' required: False", 'FactoryForm.Meta.formfield_callback: None', 'on the class itself']),
        ('Where are modelform_factory, ModelFormOptions, ModelFormMetaclass and BaseModelForm?', ['563', '245', '258', '339']),
        ('What does modelform_factory put in the new class attributes, and how does the metaclass pick the callback?', ['form_class_attrs = {"Meta": Meta, "formfield_callback": formfield_callback}', 'attrs.pop("formfield_callback", base_formfield_callback)', 'b.Meta.formfield_callback']),
        ('What did the agent find about MyForm.formfield_callback, and where is the callback used?', ['MyForm.formfield_callback exists: False', 'popped by the metaclass', 'fields_for_model']),
        ('Which edit was attempted, and did it work?', ['form_class_attrs["formfield_callback"] = formfield_callback', "sed -i '638s", "didn't replace it"]),
    ],
    _T + 'django__django-16493/django__django-16493.traj.json': [
        ('Where are FileField, its callable-storage handling and deconstruct?', ['224', 'self._storage_callable = self.storage', '298', 'def deconstruct(self):']),
        ('What did the first reproduction fail with, and what did the simplified one print?', ["No module named 'reproduce_app'", "Field deconstruction kwargs: {'upload_to': ''}", "FAILURE: 'storage' is missing from kwargs."]),
        ('How was line 298 changed?', ["sed -i '298s", 'if getattr(self, "_storage_callable", self.storage) is not default_storage:', 'found 2 actions']),
        ('What did the reproduction print after the fix?', ["SUCCESS: 'storage' is present in kwargs.", 'Storage value: <function get_storage']),
        ('Which extra storage cases were checked, and with what results?', ['test_default_storage.py', 'test_explicit_default_storage.py', "SUCCESS: 'storage' is correctly omitted from kwargs.", 'test_other_storage.py', "SUCCESS: 'storage' is present and correct."]),
    ],
}
