# The Python binding's CPU tests (python/tests: pytest on NumPy, checked against the oracle
# in tests/oracle) with the libsmla built beside this smla binary, the package taken from
# the source tree. numpy and pytest are required: without them this test fails rather than
# skips (scripts/install-deps.sh installs them). Usage: bash cli_python.sh <smla-binary> <repo-root>
set -u
smla=$1
root=$2
library=$(dirname "$smla")/libsmla.so
for module in numpy pytest; do
    if ! python3 -c "import $module" 2>/dev/null; then
        echo "FAIL: cli_python needs python3 with $module (scripts/install-deps.sh)" >&2
        exit 1
    fi
done
if [ ! -f "$library" ]; then
    echo "FAIL: cli_python: no $library (build the smla target)" >&2
    exit 1
fi
cd "$root/python" || exit 1
SMLA_LIBRARY=$library PYTHONPATH=$root/python exec python3 -m pytest -q -p no:cacheprovider tests
