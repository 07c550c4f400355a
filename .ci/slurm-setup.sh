#!/usr/bin/env bash
# Install Debian's Slurm and start a single-node cluster on loopback (for tests/cluster/test_slurm.py).
#
# Needs root and apt-get; works without systemd (the daemons are started directly).  Idempotent:
# running it again leaves running daemons alone.  The node is this machine's short hostname with
# address 127.0.0.1, in one partition "debug"; Slurm jobs run as the submitting user.
#
#   .ci/slurm-setup.sh          install (if needed), configure, start
#   .ci/slurm-setup.sh stop     stop slurmd, slurmctld and munged again
set -euo pipefail

CONF_DIR=/etc/slurm
STATE_DIR=/var/spool/slurmctld
SPOOL_DIR=/var/spool/slurmd
LOG_DIR=/var/log/slurm
PARTITION=debug

log() { echo "slurm-setup: $*"; }

# a process is alive when it exists and is not a zombie (without systemd nobody may reap it)
alive() { [ -e "/proc/$1" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }

# is the daemon NAME of pid file $2 running?
running() { local pid; pid=$(cat "$2" 2>/dev/null || true); [ -n "$pid" ] && alive "$pid"; }

# stop a daemon by its pid file (only that instance, never by name)
stop_daemon() {
  local name=$1 pidfile=$2 pid
  pid=$(cat "$pidfile" 2>/dev/null || true)
  if [ -n "$pid" ] && alive "$pid"; then
    log "stopping $name ($pid)"
    kill "$pid" || true
    for _ in $(seq 50); do alive "$pid" || break; sleep 0.1; done
  fi
}

stop() {
  stop_daemon slurmd /run/slurmd.pid
  stop_daemon slurmctld /run/slurmctld.pid
  stop_daemon munged /run/munge/munged.pid
}

if [ "${1:-}" = "stop" ]; then
  stop
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  echo "slurm-setup: must run as root (installs packages and starts daemons)" >&2
  exit 1
fi

if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null \
   || ! command -v sbatch >/dev/null; then
  log "installing slurmctld, slurmd, slurm-client and munge"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurmctld slurmd slurm-client munge >/dev/null
fi

# --- munge: shared-secret authentication between the Slurm daemons and the commands
if [ ! -s /etc/munge/munge.key ]; then
  log "creating a munge key"
  mungekey --create --keyfile /etc/munge/munge.key
fi
chown munge:munge /etc/munge/munge.key
chmod 400 /etc/munge/munge.key
mkdir -p /run/munge /var/lib/munge /var/log/munge
chown munge:munge /run/munge /var/lib/munge /var/log/munge
chmod 755 /run/munge
if ! running munged /run/munge/munged.pid; then
  log "starting munged"
  runuser -u munge -- /usr/sbin/munged
fi
for _ in $(seq 50); do
  munge -n </dev/null | unmunge >/dev/null 2>&1 && break
  sleep 0.1
done
munge -n </dev/null | unmunge >/dev/null || { echo "slurm-setup: munge does not work" >&2; exit 1; }

# --- slurm.conf: one node (this host, on 127.0.0.1) with its CPUs and most of its memory
HOST=$(hostname -s)
CPUS=$(nproc)
MEM_MB=$(awk '/MemTotal/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)
mkdir -p "$CONF_DIR" "$STATE_DIR" "$SPOOL_DIR" "$LOG_DIR"
CONF_NEW=$(mktemp)
cat >"$CONF_NEW" <<EOF
# single-node Slurm for sdc-pipeline's cluster tests (written by .ci/slurm-setup.sh)
ClusterName=sdcci
SlurmctldHost=${HOST}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=${STATE_DIR}
SlurmdSpoolDir=${SPOOL_DIR}
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=${LOG_DIR}/slurmctld.log
SlurmdLogFile=${LOG_DIR}/slurmd.log
# no cgroups, no systemd: track job processes by their parent chain
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
# keep finished jobs visible to scontrol for 10 minutes (the tests check their final state)
MinJobAge=600
SlurmctldTimeout=30
SlurmdTimeout=30
KillWait=5
NodeName=${HOST} NodeAddr=127.0.0.1 CPUs=${CPUS} RealMemory=${MEM_MB} State=UNKNOWN
PartitionName=${PARTITION} Nodes=${HOST} Default=YES MaxTime=INFINITE State=UP
EOF
changed=0
if ! cmp -s "$CONF_NEW" "$CONF_DIR/slurm.conf"; then
  install -m 644 "$CONF_NEW" "$CONF_DIR/slurm.conf"
  changed=1
fi
rm -f "$CONF_NEW"

if [ "$changed" = 1 ] && running slurmctld /run/slurmctld.pid; then
  log "configuration changed: restarting the Slurm daemons"
  stop_daemon slurmd /run/slurmd.pid
  stop_daemon slurmctld /run/slurmctld.pid
fi
if ! running slurmctld /run/slurmctld.pid; then
  log "starting slurmctld"
  /usr/sbin/slurmctld
fi
if ! running slurmd /run/slurmd.pid; then
  log "starting slurmd"
  /usr/sbin/slurmd
fi

# wait for the node to register and become usable
for _ in $(seq 60); do
  state=$(sinfo -h -n "$HOST" -o %T 2>/dev/null | head -1 || true)
  case "$state" in
    idle|mixed|allocated) break ;;
    down*|drain*) scontrol update NodeName="$HOST" State=RESUME >/dev/null 2>&1 || true ;;
  esac
  sleep 1
done
state=$(sinfo -h -n "$HOST" -o %T 2>/dev/null | head -1 || true)
case "$state" in
  idle|mixed|allocated) ;;
  *) echo "slurm-setup: node $HOST is '$state', not usable; see $LOG_DIR/slurmctld.log and slurmd.log" >&2
     exit 1 ;;
esac

# a real job end to end
out=$(srun -p "$PARTITION" -N1 -n1 -t 1 hostname)
log "srun ran on $out; partition $PARTITION, node $HOST ($CPUS CPUs, ${MEM_MB} MB) is $state"
