#!/usr/bin/env bash
# Create (or reuse) the LiteLLM benchmark venv at <repo>/target/litellm-venv.
#
# Idempotent: when the venv already has litellm==$LITELLM_VERSION (and matplotlib), it only prints
# the versions and exits. First run: ~1-2 min on the 2-core dev machine (mostly wheel downloads);
# a re-run is < 2 s. Output is quiet; the full pip log goes to target/litellm-venv/pip-install.log.
#
# Env overrides: PYTHON (default python3.11), LITELLM_VENV (default <repo>/target/litellm-venv).
set -euo pipefail

LITELLM_VERSION=1.100.0 # the pin: never 1.107.x (see README.md)
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
venv=${LITELLM_VENV:-$repo/target/litellm-venv}
python=${PYTHON:-python3.11}

versions() {
    "$venv/bin/python" - <<'PY'
import importlib.metadata as m, sys
print("python", sys.version.split()[0])
for name in ("litellm", "matplotlib", "httpx", "aiohttp", "uvicorn", "fastapi"):
    try:
        print(name, m.version(name))
    except m.PackageNotFoundError:
        print(name, "MISSING")
PY
}

installed_ok() {
    [ -x "$venv/bin/python" ] || return 1
    "$venv/bin/python" - "$LITELLM_VERSION" <<'PY' 2>/dev/null
import importlib.metadata as m, sys
ok = m.version("litellm") == sys.argv[1]
m.version("matplotlib"); m.version("uvicorn"); m.version("fastapi")  # proxy extra + plotting present
sys.exit(0 if ok else 1)
PY
}

if installed_ok; then
    echo "litellm venv ready: $venv"
    versions
    exit 0
fi

start=$(date +%s)
if [ ! -x "$venv/bin/python" ]; then
    echo "creating venv $venv ($("$python" --version 2>&1))"
    mkdir -p "$(dirname "$venv")"
    "$python" -m venv "$venv"
fi
log=$venv/pip-install.log
echo "installing litellm[proxy]==$LITELLM_VERSION + matplotlib (log: $log)"
if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "litellm[proxy]==$LITELLM_VERSION" matplotlib >"$log" 2>&1; then
    echo "pip install failed; last lines of $log:" >&2
    tail -n 20 "$log" >&2
    exit 1
fi
if ! installed_ok; then
    echo "install finished but litellm != $LITELLM_VERSION or a package is missing" >&2
    versions >&2
    exit 1
fi
echo "installed in $(($(date +%s) - start)) s: $venv"
versions
