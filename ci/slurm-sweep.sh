#!/usr/bin/env bash
# Runs the Slurm example of docs/reference.md for real and checks it against a sweep run in one
# process.
#
# What it proves: the job script in docs/reference.md ("### Beyond one machine", the ```sh block
# after "As a Slurm job array"), submitted to a real Slurm as a job array, writes one shard per
# array task; the reference's own merge line ("# then, once: retrystorm merge ...") combines them;
# and the merged `<name>-sweep/` folder is byte for byte the folder that the same command line,
# without `--shard`, writes in one process: every file, the CSVs, sweep.json, the
# recommendation and the heatmaps (`diff -r`).
#
# How:
#   1. installs Debian's `slurm-wlm` (slurmctld, slurmd, slurm-client: sbatch, sinfo, ...) and
#      `munge` with apt-get if they are missing (needs root, as CI is);
#   2. builds the release binary (`cargo build --release --locked`) and puts it on PATH;
#   3. in a temporary folder: makes a munge key and starts its own munged on its own socket;
#      writes a single-node slurm.conf (this machine, its CPUs and memory; proctrack/linuxproc,
#      task/none, select/cons_tres, no accounting, no cgroups, so no systemd or cgroup
#      delegation is needed) and points SLURM_CONF at it; starts slurmctld and slurmd in the
#      foreground in the background, and waits until `sinfo` shows the node idle;
#   4. takes the job script from docs/reference.md, changes only its output folder
#      (/shared/sweeps) to one in the temporary folder, and submits it with `sbatch --wait` from the repository's
#      root (the array range and CPUs come from its #SBATCH lines); checks that every array
#      task completed with exit code 0 and wrote its shard;
#   5. runs the reference's merge line (same path change), then the job script's sweep without
#      its `--shard` argument into another folder, and compares the two sweep folders with
#      `diff -r`, printing the difference and failing if there is any.
# On exit, whatever happened, it cancels the job, stops the daemons it started and removes the
# temporary folder (kept, and its path printed, when KEEP_SLURM_TMP=1).
#
# Usage: bash ci/slurm-sweep.sh   (as root; run by .ci/run after `cargo test --profile bench`)
# Environment: SLURM_SWEEP_TIMEOUT (seconds for the job array, default 1200),
#   SLURM_CTLD_PORT / SLURM_D_PORT (default: 6817 / 6818, or the next free pair),
#   KEEP_SLURM_TMP=1 (keep the temporary folder), CARGO_TARGET_DIR as for cargo.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)

say() { echo "slurm-sweep: $*"; }
die() {
    echo "slurm-sweep: FAILED: $*" >&2
    exit 1
}

# --- 1. packages -------------------------------------------------------------------------------
missing=()
for cmd in slurmctld slurmd sbatch sinfo squeue scontrol scancel munged mungekey munge unmunge; do
    command -v "$cmd" > /dev/null || missing+=("$cmd")
done
if ((${#missing[@]})); then
    [[ $(id -u) == 0 ]] || die "${missing[*]} missing; needs root to install slurm-wlm and munge"
    say "${missing[*]} missing: installing slurm-wlm and munge with apt-get"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q > /dev/null
    apt-get install -y -q --no-install-recommends slurm-wlm munge > /dev/null
fi
[[ $(id -u) == 0 ]] || die "run as root: the daemons and the job run as root (SlurmUser=root)"
say "$(slurmctld -V), $(munged -V 2>&1 | awk '{print $1; exit}')"

# --- 2. the binary -----------------------------------------------------------------------------
cargo build --release --locked
target_dir=$(cargo metadata --format-version 1 --no-deps | sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
[[ -x $target_dir/release/retrystorm ]] || die "no binary at $target_dir/release/retrystorm"
export PATH=$target_dir/release:$PATH

# --- 3. munge and a single-node Slurm ----------------------------------------------------------
tmp=$(mktemp -d "${TMPDIR:-/tmp}/retrystorm-slurm.XXXXXX")
chmod 711 "$tmp" # munged wants the folders above its socket searchable by all
conf=$tmp/slurm.conf
munge_pid='' ctld_pid='' slurmd_pid='' submitted=''

show_logs() {
    local f
    for f in "$tmp"/log/*; do
        [[ -s $f ]] || continue
        # A daemon's stderr repeats its log file, but holds what it said before opening it.
        [[ $f == *.out && -s ${f%.out}.log ]] && continue
        echo "----- $f (last 60 lines)" >&2
        tail -n 60 "$f" >&2
    done
}

# Every process started here carries SLURM_CONF=$conf in its environment (the daemons, the
# slurmstepd they start and the job's own processes), and no other process does.
ours() {
    local p
    for p in /proc/[0-9]*; do
        p=${p#/proc/}
        [[ $p == "$$" || $p == "$BASHPID" ]] && continue
        tr '\0' '\n' 2> /dev/null < "/proc/$p/environ" | grep -qxF "SLURM_CONF=$conf" && echo "$p"
    done
    return 0
}

stop_pid() { # pid name: TERM, wait up to 10 s, then KILL
    local pid=$1 i
    [[ -n $pid ]] && kill -0 "$pid" 2> /dev/null || return 0
    kill -TERM "$pid" 2> /dev/null || true
    for ((i = 0; i < 100; i++)); do
        kill -0 "$pid" 2> /dev/null || return 0
        sleep 0.1
    done
    echo "slurm-sweep: $2 ($pid) did not stop; killing it" >&2
    kill -KILL "$pid" 2> /dev/null || true
}

cleanup() {
    local rc=$? p
    trap - EXIT INT TERM
    if ((rc != 0)); then
        show_logs
    fi
    if [[ -n $submitted ]]; then # this cluster runs only this script's jobs
        scancel --partition=ci 2> /dev/null || true
    fi
    stop_pid "$slurmd_pid" slurmd
    stop_pid "$ctld_pid" slurmctld
    for p in $(ours); do # a slurmstepd or job process left behind: none should be
        echo "slurm-sweep: stopping leftover process $p: $(tr '\0' ' ' 2> /dev/null < "/proc/$p/cmdline")" >&2
        kill -KILL "$p" 2> /dev/null || true
    done
    stop_pid "$munge_pid" munged
    wait 2> /dev/null || true
    if [[ ${KEEP_SLURM_TMP:-0} == 1 ]]; then
        echo "slurm-sweep: kept $tmp" >&2
    else
        rm -rf "$tmp"
    fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

mkdir -p "$tmp"/{munge,log,state,spool,shared,single}
chmod 711 "$tmp/munge"

mungekey --create --keyfile="$tmp/munge/munge.key" 2> /dev/null ||
    { dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none && chmod 400 "$tmp/munge/munge.key"; }
socket=$tmp/munge/munge.socket
munged --foreground --force --key-file="$tmp/munge/munge.key" --socket="$socket" \
    --pid-file="$tmp/munge/munged.pid" --seed-file="$tmp/munge/munged.seed" \
    > "$tmp/log/munged.out" 2>&1 &
munge_pid=$!
for ((i = 0; i < 100; i++)); do
    [[ -S $socket ]] && break
    kill -0 "$munge_pid" 2> /dev/null || die "munged exited at start"
    sleep 0.1
done
[[ -S $socket ]] || die "munged made no socket in 10 s"
munge --socket="$socket" --no-input | unmunge --socket="$socket" > /dev/null ||
    die "munge cannot encode and decode a credential"

node=$(hostname -s)
# Two free ports, the usual ones unless something listens there (another Slurm, say).
port_free() { ! (: > "/dev/tcp/127.0.0.1/$1") 2> /dev/null; }
ctld_port=${SLURM_CTLD_PORT:-}
if [[ -z $ctld_port ]]; then
    for ((p = 6817; p < 6917; p += 2)); do
        if port_free "$p" && port_free $((p + 1)); then
            ctld_port=$p
            break
        fi
    done
    [[ -n $ctld_port ]] || die "no two free ports from 6817 to 6917; set SLURM_CTLD_PORT and SLURM_D_PORT"
fi
slurmd_port=${SLURM_D_PORT:-$((ctld_port + 1))}
# The node as slurmd sees it (CPUs, sockets, cores, threads, memory), so that it is not drained
# for a mismatch; at least 2 CPUs, which the reference's job asks for (config_overrides lets a
# 1-CPU machine run it anyway).
hardware=$(slurmd -C 2> /dev/null | sed -n '1s/^NodeName=[^ ]* //p')
if [[ $hardware != *CPUs=* || $hardware != *RealMemory=* || $hardware == *CPUs=1\ * ]]; then
    hardware="CPUs=2 RealMemory=$(awk '/^MemTotal:/ {print int($2 / 1024) - 256; exit}' /proc/meminfo)"
fi
: > "$tmp/plugstack.conf"
cat > "$conf" << EOF
# Single node for ci/slurm-sweep.sh: no accounting, no cgroups, everything under $tmp.
ClusterName=retrystorm
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$socket
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
MailProg=/bin/true
PlugStackConfig=$tmp/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
SlurmdParameters=config_overrides
MinJobAge=600
NodeName=$node NodeAddr=127.0.0.1 $hardware State=UNKNOWN
PartitionName=ci Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$conf

daemons_started=$(date +%s)
slurmctld -D -c -f "$conf" > "$tmp/log/slurmctld.out" 2>&1 &
ctld_pid=$!
slurmd -D -f "$conf" -N "$node" > "$tmp/log/slurmd.out" 2>&1 &
slurmd_pid=$!

state=''
for ((i = 0; i < 120; i++)); do
    kill -0 "$ctld_pid" 2> /dev/null || die "slurmctld exited at start"
    kill -0 "$slurmd_pid" 2> /dev/null || die "slurmd exited at start"
    state=$(sinfo -h -n "$node" -o %T 2> /dev/null || true)
    [[ $state == idle ]] && break
    sleep 0.5
done
[[ $state == idle ]] || die "node $node not idle after 60 s (sinfo says '${state:-nothing}')"
say "node $node idle: $hardware, ports $ctld_port/$slurmd_port (up in $(($(date +%s) - daemons_started)) s)"

# --- 4. the reference's job array --------------------------------------------------------------
# The first ```sh block after "As a Slurm job array" in docs/reference.md.
awk '/^As a Slurm job array/ {found = 1; next}
     found && /^```sh$/ {inside = 1; next}
     inside && /^```$/ {exit}
     inside {print}' docs/reference.md > "$tmp/reference-job.sh"
[[ -s $tmp/reference-job.sh ]] || die "no \`\`\`sh block after 'As a Slurm job array' in docs/reference.md"
grep -q '/shared/sweeps' "$tmp/reference-job.sh" || die "the reference's job script does not write to /shared/sweeps"
last=$(sed -n 's/^#SBATCH --array=0-\([0-9][0-9]*\)$/\1/p' "$tmp/reference-job.sh")
[[ -n $last ]] || die "the reference's job script: no '#SBATCH --array=0-LAST' line"
shards=$((last + 1))
grep -qF -- "--shard \"\${SLURM_ARRAY_TASK_ID}/$shards\"" "$tmp/reference-job.sh" ||
    die "the reference's job script: --array=0-$last but no --shard \"\${SLURM_ARRAY_TASK_ID}/$shards\""
sed "s#/shared/sweeps#$tmp/shared#g" "$tmp/reference-job.sh" > "$tmp/job.sh"
merge_line=$(sed -n 's/^# then, once: //p' "$tmp/reference-job.sh")
[[ $merge_line == "retrystorm merge "* ]] || die "the reference's job script has no '# then, once: retrystorm merge' line"
merge_line=${merge_line//\/shared\/sweeps/$tmp/shared}
shard_glob=$(awk '{print $3}' <<< "$merge_line") # .../<name>-shards/shard-*-of-N
[[ $shard_glob == */shard-\*-of-$shards ]] || die "the reference's merge line does not take shard-*-of-$shards"
say "the reference's job script, with /shared/sweeps changed to $tmp/shared:"
sed 's/^/    /' "$tmp/job.sh"

timeout=${SLURM_SWEEP_TIMEOUT:-1200}
array_started=$(date +%s)
say "submitting it with sbatch --wait ($shards array tasks); waiting up to $timeout s"
sbatch_rc=0
submitted=1
timeout "$timeout" sbatch --wait --parsable --output="$tmp/log/job-%A_%a.out" "$tmp/job.sh" \
    > "$tmp/sbatch.out" 2> "$tmp/log/sbatch.err" || sbatch_rc=$?
job_id=$(head -n 1 "$tmp/sbatch.out" | cut -d ';' -f 1)
((sbatch_rc != 124)) || die "job array not finished after $timeout s: $(squeue 2>&1 | head -20)"
[[ -n $job_id ]] || die "sbatch gave no job id ($sbatch_rc): $(cat "$tmp/log/sbatch.err")"
say "job array $job_id done in $(($(date +%s) - array_started)) s (sbatch --wait exit code $sbatch_rc)"

failed=0
for ((k = 0; k < shards; k++)); do
    info=$(scontrol -o show job "${job_id}_$k" 2>&1 || true)
    state=$(sed -n 's/.* JobState=\([A-Z_]*\) .*/\1/p' <<< "$info")
    code=$(sed -n 's/.* ExitCode=\([0-9:]*\) .*/\1/p' <<< "$info")
    dir=${shard_glob/\*/$k}
    if [[ $state != COMPLETED || $code != 0:0 ]]; then
        echo "slurm-sweep: array task $k: JobState=${state:-?} ExitCode=${code:-?}" >&2
        failed=1
    fi
    for f in results.csv sweep.json shard.json; do
        [[ -s $dir/$f ]] || { echo "slurm-sweep: array task $k wrote no $dir/$f" >&2 && failed=1; }
    done
done
if ((failed)); then
    for f in "$tmp"/log/job-*.out; do
        echo "----- $f" >&2
        tail -n 30 "$f" >&2
    done
    die "some array tasks failed"
fi
((sbatch_rc == 0)) || die "sbatch --wait exited with $sbatch_rc though every task completed"

say "all $shards array tasks COMPLETED with exit code 0:0, each wrote its shard"

# --- 5. merge, one process, compare ------------------------------------------------------------
say "merge: $merge_line"
bash -c "$merge_line" > "$tmp/log/merge.out" 2>&1 ||
    { cat "$tmp/log/merge.out" >&2 && die "merge failed"; }

sed -e 's/ *--shard "[^"]*"//' -e "s#/shared/sweeps#$tmp/single#g" "$tmp/reference-job.sh" > "$tmp/single.sh"
! grep -q -- '--shard' "$tmp/single.sh" || die "could not take --shard out of the job script"
say "the same sweep in one process, into $tmp/single"
bash "$tmp/single.sh" > "$tmp/log/single.out" 2>&1 ||
    { cat "$tmp/log/single.out" >&2 && die "the one-process sweep failed"; }

sweeps=("$tmp"/single/*-sweep)
if ((${#sweeps[@]} != 1)) || [[ ! -d ${sweeps[0]} ]]; then
    die "the one-process run wrote no single <name>-sweep folder"
fi
name=$(basename "${sweeps[0]}")
merged=$tmp/shared/$name
[[ -d $merged ]] || die "merge wrote no $merged"
if ! diff -r "$merged" "${sweeps[0]}" > "$tmp/diff.txt" 2>&1; then
    echo "----- diff -rq $merged ${sweeps[0]}" >&2
    diff -rq "$merged" "${sweeps[0]}" >&2 || true
    echo "----- diff -r, the first 60 lines, each cut at 400 characters" >&2
    head -n 60 "$tmp/diff.txt" | cut -c 1-400 >&2
    die "the merged sweep differs from the one-process sweep"
fi
files=$(find "$merged" -type f | wc -l)
say "merged $name/ equals the one-process $name/ byte for byte ($files files:" \
    "$(cd "$merged" && find . -type f | sed 's#^\./##' | sort | tr '\n' ' '))"
say "passed in $(($(date +%s) - started)) s"
