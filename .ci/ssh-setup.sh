#!/usr/bin/env bash
# Start an sshd on 127.0.0.1:2222 that accepts a throw-away key (for tests/cluster/test_ssh.py).
#
# Needs root and apt-get (Debian's openssh-server); works without systemd.  Everything lives in
# $SDC_SSH_DIR (default /var/lib/sdc-ci-ssh): the key pair the tests log in with (id_ed25519),
# the authorized_keys file, the host key and the sshd configuration.  The system's own sshd
# configuration and ~/.ssh are not touched.  Idempotent.
#
#   .ci/ssh-setup.sh          install (if needed), configure, start
#   .ci/ssh-setup.sh stop     stop this sshd again
set -euo pipefail

DIR=${SDC_SSH_DIR:-/var/lib/sdc-ci-ssh}
PORT=${SDC_SSH_PORT:-2222}
PIDFILE=$DIR/sshd.pid

log() { echo "ssh-setup: $*"; }
alive() { [ -e "/proc/$1" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
running() { local pid; pid=$(cat "$PIDFILE" 2>/dev/null || true); [ -n "$pid" ] && alive "$pid"; }

if [ "${1:-}" = "stop" ]; then
  if running; then
    log "stopping sshd ($(cat "$PIDFILE"))"
    kill "$(cat "$PIDFILE")"
  fi
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  echo "ssh-setup: must run as root (installs packages and starts sshd)" >&2
  exit 1
fi

if [ ! -x /usr/sbin/sshd ] || ! command -v ssh-keygen >/dev/null; then
  log "installing openssh-server"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssh-server openssh-client >/dev/null
fi

mkdir -p "$DIR" /run/sshd
chmod 700 "$DIR"
[ -s "$DIR/id_ed25519" ] || ssh-keygen -q -t ed25519 -N "" -C "sdc-pipeline CI (throw-away)" -f "$DIR/id_ed25519"
[ -s "$DIR/host_ed25519" ] || ssh-keygen -q -t ed25519 -N "" -C "sdc-pipeline CI host" -f "$DIR/host_ed25519"
install -m 600 "$DIR/id_ed25519.pub" "$DIR/authorized_keys"

cat >"$DIR/sshd_config" <<EOF
# sshd for sdc-pipeline's SSHCluster test (written by .ci/ssh-setup.sh): loopback only, key only
ListenAddress 127.0.0.1
Port ${PORT}
HostKey ${DIR}/host_ed25519
PidFile ${PIDFILE}
AuthorizedKeysFile ${DIR}/authorized_keys
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
MaxStartups 50:30:100
MaxSessions 50
EOF
/usr/sbin/sshd -t -f "$DIR/sshd_config"

if ! running; then
  log "starting sshd on 127.0.0.1:${PORT}"
  /usr/sbin/sshd -f "$DIR/sshd_config"
fi

for _ in $(seq 50); do
  ssh -q -i "$DIR/id_ed25519" -p "$PORT" -o BatchMode=yes -o StrictHostKeyChecking=no \
    -o UserKnownHostsFile=/dev/null 127.0.0.1 true && break
  sleep 0.1
done
ssh -q -i "$DIR/id_ed25519" -p "$PORT" -o BatchMode=yes -o StrictHostKeyChecking=no \
  -o UserKnownHostsFile=/dev/null 127.0.0.1 true \
  || { echo "ssh-setup: cannot log in to 127.0.0.1:${PORT} with $DIR/id_ed25519" >&2; exit 1; }
log "sshd on 127.0.0.1:${PORT} accepts $DIR/id_ed25519 for $(id -un)"
