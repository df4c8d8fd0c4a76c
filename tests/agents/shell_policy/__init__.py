import pytest

# the row checks live in a helper module: let pytest show what a failing row produced
pytest.register_assert_rewrite("tests.support.shell_policy")
