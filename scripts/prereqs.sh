# Sourced by scripts/test and scripts/gateway: installs what the project needs beyond the Swift toolchain.

# libmicrohttpd and zlib headers and pkg-config files (Debian libmicrohttpd-dev, zlib1g-dev: gzip bodies).
ensure_microhttpd() {
    if pkg-config --exists libmicrohttpd zlib 2>/dev/null; then
        return 0
    fi
    echo "==> installing libmicrohttpd-dev and zlib1g-dev" >&2
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq libmicrohttpd-dev zlib1g-dev pkg-config >/dev/null
}

# Installs Debian packages (without their recommended ones), as root or through sudo.
apt_install() {
    echo "==> installing $*" >&2
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# Headless Chromium for the browser tests (Debian's chromium package); CONVEX_TEST_CHROMIUM names another binary.
ensure_chromium() {
    if [ -n "${CONVEX_TEST_CHROMIUM:-}" ] || command -v chromium >/dev/null 2>&1; then
        return 0
    fi
    apt_install chromium
}

# A Python virtual environment at .venv with the official Convex client and the test tools.
ensure_python_venv() {
    local req="scripts/requirements-test.txt"
    local stamp=".venv/.requirements-installed"
    if [ -x .venv/bin/python ] && [ -f "$stamp" ] && cmp -s "$req" "$stamp"; then
        return 0
    fi
    echo "==> creating .venv with $(tr '\n' ' ' < "$req")" >&2
    python3 -m venv .venv
    .venv/bin/pip install -q --disable-pip-version-check -r "$req"
    cp "$req" "$stamp"
}

# HAProxy (Debian's haproxy) for scripts/replicas and the replica tests; CONVEX_TEST_HAPROXY names another binary.
ensure_haproxy() {
    if [ -n "${CONVEX_TEST_HAPROXY:-}" ] || command -v haproxy >/dev/null 2>&1; then
        return 0
    fi
    apt_install haproxy
}
