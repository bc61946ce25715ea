#!/usr/bin/env bash
# Rebuild the fio outputs of this folder with the machine's fio (fio 3.33 from Debian 12 when they were made):
# a folder of results as another project leaves it, under names that say nothing of what they hold.
# Each job runs 1 s against a small file in a scratch folder; the client/server one starts two
# `fio --server` on 127.0.0.1 (ports 28781/28782) and stops them. Not run by the tests.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/folder-walk"
SCRATCH="$(mktemp -d)"
trap 'kill $S1 $S2 2>/dev/null || true; rm -rf "$SCRATCH"' EXIT
cd "$SCRATCH"
common=(--ioengine=psync --runtime=1 --time_based --size=8M)

# json, named output.3 (a numbered output, as a batch script leaves them)
fio --name=seqread --filename="$SCRATCH/f1" --rw=read --bs=64k "${common[@]}" --output-format=json \
    --output="$HERE/output.3"
# json in a .txt
fio --name=randwrite --filename="$SCRATCH/f2" --rw=randwrite --bs=16k "${common[@]}" --output-format=json \
    > "$HERE/randwrite.txt"
# json+ (clat bins) of a mixed job, stdout and stderr in one file, with ETA lines: fio's warning about the 3 TiB
# file (the 32-bit tausworthe generator) lands before the JSON
truncate -s 3T "$SCRATCH/sparse"
fio --name=mixed --filename="$SCRATCH/sparse" --rw=randrw --rwmixread=70 --bs=512 --ioengine=psync --runtime=1 \
    --time_based --size=3T --output-format=json+ --eta=always > "$HERE/mixed.fiolog" 2>&1
# a latency log beside it, and the job file it came from
cat > "$HERE/job.fio" <<JOB
[global]
ioengine=psync
runtime=1
time_based
size=8M
[randread-4k]
filename=$SCRATCH/f3
rw=randread
bs=4k
write_lat_log=mix
log_avg_msec=200
JOB
sed "s#$SCRATCH#/tmp/fio-scratch#" -i "$HERE/job.fio"
sed "s#/tmp/fio-scratch#$SCRATCH#" "$HERE/job.fio" > "$SCRATCH/job.fio"
fio "$SCRATCH/job.fio" --output-format=json --output="$HERE/run.json"
cp "$SCRATCH"/mix_lat.1.log "$HERE/mix_lat.1.log"
# client/server: two servers on loopback, one client run per server, stdout as fio writes it
fio --server=ip:127.0.0.1,28781 > /dev/null 2>&1 & S1=$!
fio --server=ip:127.0.0.1,28782 > /dev/null 2>&1 & S2=$!
sleep 1
cat > "$SCRATCH/cs.fio" <<JOB
[cs-randread-4k]
filename=/tmp/h34-cs-\${HOSTNAME}-file
rw=randread
bs=4k
ioengine=psync
runtime=1
time_based
size=8M
JOB
fio --client=127.0.0.1,28781 "$SCRATCH/cs.fio" --client=127.0.0.1,28782 "$SCRATCH/cs.fio" \
    --output-format=json --eta=always > "$HERE/fio-result.txt"
rm -f /tmp/h34-cs-*-file
# the scratch folder's random name out of the outputs, so that a rebuild differs only in its numbers
sed -i "s#$SCRATCH#/tmp/fio-scratch#g" "$HERE"/output.3 "$HERE"/randwrite.txt "$HERE"/mixed.fiolog "$HERE"/run.json \
    "$HERE"/fio-result.txt
# not fio's: an esxtop batch capture under the result's name (run.csv next to run.json), from ../esxtop
cp "$HERE/../esxtop/esx01_one_sample_d2.csv" "$HERE/run.csv"
