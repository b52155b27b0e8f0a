#!/usr/bin/env bash
# In a call on the machine that runs scripts/device/session.sh: wait up to WAIT_S seconds (less if the session
# finishes), then copy what it has packed so far into $OUT. usage: collect.sh WAIT_S
end=$(( $(date +%s) + $1 ))
while [ ! -f /tmp/res/done ] && [ "$(date +%s)" -lt "$end" ]; do sleep 5; done
cp /tmp/res/*.tar.gz /tmp/res/*.log /tmp/res/gpus.csv /tmp/res/topo.txt /tmp/res/cpu.txt "$OUT"/ 2>/dev/null
ls /tmp/res; tail -n 4 /tmp/res/*.log
