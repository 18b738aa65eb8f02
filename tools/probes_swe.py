"""Probes over mini-swe-agent-gemini3 SWE-bench trajectories: questions a continuing agent must answer, facts read by hand from the
conversations (not extracted by the library)."""

PROBES: dict[str, list[tuple[str, list[str]]]] = {
    'mini-swe-agent-gemini3:swebench_results/20251118_gemini-3-pro-74pct/trajs/astropy__astropy-12907/astropy__astropy-12907.traj.json': [
        ('Which file holds the fix?', ['astropy/modeling/separable.py']),
        ('Which function had the bug, and what line was changed to what?', ['_cstack', 'cright[-right.shape[0]:, -right.shape[1]:] = right']),
        ('Which script reproduces the issue?', ['reproduce_issue.py']),
        ('Which test file and test were added?', ['astropy/modeling/tests/test_separable.py', 'test_separable_nested_compound_models']),
        ('How many tests passed before the new test was added?', ['11 passed']),
    ],
    'mini-swe-agent-gemini3:swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-11099/django__django-11099.traj.json': [
        ('Which file and classes were changed?', ['django/contrib/auth/validators.py', 'ASCIIUsernameValidator', 'UnicodeUsernameValidator']),
        ('What regex replaced the old one?', ['\\A[\\w.@+-]+\\Z']),
        ('What did the reproduction script report before the fix?', ['FAILED - Accepted username with trailing newline']),
        ('Which admin file was examined for a similar regex?', ['django/contrib/admin/sites.py']),
        ('Which helper scripts were written?', ['reproduce_issue.py', 'test_valid_usernames.py']),
    ],
    'mini-swe-agent-gemini3:swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-11848/django__django-11848.traj.json': [
        ('Which file and function are being fixed, and at which line does the function start?', ['django/utils/http.py', 'parse_http_date', '158']),
        ('What did the reproduction show before the fix?', ['Parsed: 1970, Expected: 2070']),
        ('Which Python version runs in the environment and what is the current year?', ['Python 3.6.13', '2025']),
        ('Which helper scripts were written?', ['reproduce_issue.py', 'update_http.py']),
        ('Which lines of the file were replaced?', ['178-182']),
    ],
    'mini-swe-agent-gemini3:swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-13670/django__django-13670.traj.json': [
        ('Which file and method are being fixed?', ['django/utils/dateformat.py', 'y()']),
        ('What did the reproduction print for year 123 before the fix?', ["Formatted 'y': '3'", "Expected 'y': '23'"]),
        ('What was the old implementation of y()?', ['str(self.data.year)[2:]']),
        ('Which other year methods were looked at, and at which lines?', ['o()', 'Y()', '279']),
        ('Which test module covers dateformat?', ['tests/utils_tests/test_dateformat.py']),
    ],
    'mini-swe-agent-gemini3:swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-11141/django__django-11141.traj.json': [
        ('Which file holds the check being removed, and what does it check?', ['django/db/migrations/loader.py', '__file__']),
        ('Which lines were removed?', ['89-91']),
        ('What did the first reproduction report?', ['FAILURE: Migration NOT found']),
        ('Which file was searched first and did not contain the check?', ['django/core/management/commands/migrate.py']),
        ('Which settings files were written for the reproductions?', ['reproduce_settings.py', 'reproduce_settings_file.py', 'reproduce_settings_regular.py']),
        ('What does migration discovery use instead of the file system?', ['pkgutil.iter_modules']),
    ],
    'mini-swe-agent-gemini3:swebench_results/20251118_gemini-3-pro-74pct/trajs/django__django-11885/django__django-11885.traj.json': [
        ('Where is the Collector class defined?', ['django/db/models/deletion.py']),
        ('Which test broke after the fix, and how?', ['test_large_delete', '22 queries executed, 25 expected']),
        ('What batch size did the check script print?', ['Batch size: 500']),
        ('Which helper scripts did the agent write?', ['apply_fix.py', 'check_batch_size.py']),
        ('Where is delete_qs implemented?', ['delete_qs', 'django/db/models/sql/subqueries.py']),
        ('At which line does the fast-delete loop start?', ['312']),
    ],
}
