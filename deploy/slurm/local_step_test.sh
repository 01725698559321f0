#!/bin/bash
# Runs psflow.sbatch on this machine without Slurm: stand-ins for srun and
# scancel start the step's 5 tasks as local processes with the SLURM_*
# variables srun would give them (one node, 127.0.0.1, running all 5), so
# that the script's task logic and psflow's --cluster-resolver slurm are
# exercised end to end. It checks the run finished and every task exited 0.
#   deploy/slurm/local_step_test.sh path/to/psflow [train flags]
# Not a substitute for a real Slurm run: see README.md.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
psflow=$(realpath "${1:?usage: $0 path/to/psflow [train flags]}")
shift
train_flags=${*:---model logreg --epochs 1 --startup-timeout 60}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"

# srun [options] command...: one process per task, all on 127.0.0.1.
cat > "$work/bin/srun" <<'SRUN'
#!/bin/bash
while [ "${1#-}" != "$1" ]; do shift; done
pids=()
for rank in $(seq 0 $((SLURM_NTASKS - 1))); do
  SLURM_PROCID=$rank SLURM_STEP_ID=0 SLURM_STEP_NUM_TASKS=$SLURM_NTASKS \
    SLURM_STEP_NODELIST=127.0.0.1 SLURM_STEP_TASKS_PER_NODE=$SLURM_NTASKS \
    "$@" > "$FAKE_SLURM_DIR/task-$rank.log" 2>&1 &
  pids+=($!)
  echo $! >> "$FAKE_SLURM_DIR/pids"
done
rc=0
for rank in "${!pids[@]}"; do
  code=0
  wait "${pids[$rank]}" || code=$?
  echo "task $rank exited $code" >> "$FAKE_SLURM_DIR/exits"
  [ "$code" -eq 0 ] || rc=1
done
exit $rc
SRUN
# scancel --signal=TERM <step>: TERM to the step's task processes.
cat > "$work/bin/scancel" <<'SCANCEL'
#!/bin/bash
while read -r pid; do kill -TERM "$pid" 2>/dev/null || true; done < "$FAKE_SLURM_DIR/pids"
SCANCEL
chmod +x "$work/bin/srun" "$work/bin/scancel"

status=0
env -u TF_CONFIG -u PSFLOW_TLS_DIR PATH="$work/bin:$PATH" FAKE_SLURM_DIR="$work" \
  SLURM_JOB_ID=$$ SLURM_NTASKS=5 SLURM_JOB_NODELIST=127.0.0.1 SLURM_TASKS_PER_NODE=5 \
  PSFLOW="$psflow" RUN_DIR="$work/run" TRAIN_FLAGS="$train_flags" \
  bash "$here/psflow.sbatch" || status=$?
cat "$work/exits"
for rank in 0 1 2 3 4; do
  echo "--- task $rank (last lines)"
  tail -n 3 "$work/task-$rank.log"
done
# Every task served or trained over mutual TLS with the job's certificates,
# which are gone with the job.
for rank in 1 2 3 4; do
  if ! grep -q "mTLS on" "$work/task-$rank.log"; then
    echo "local_step_test: task $rank did not serve over mutual TLS" >&2
    status=1
  fi
done
if ls -d "$work"/run/tls-* > /dev/null 2>&1; then
  echo "local_step_test: the job's credentials directory was not removed" >&2
  status=1
fi
if [ "$status" -ne 0 ] || [ ! -f "$work/run/summary.json" ]; then
  echo "local_step_test: FAILED (status $status)" >&2
  exit 1
fi
echo "local_step_test: passed"
