# speed.sh ROUNDS: ../tables-i20-speed2/speedn.py real learned 10, base (/work/base-main) and this branch alternating
d=$(cd $(dirname $0) && pwd)
for r in $(seq 1 ${1:-2}); do
  for t in /work/base-main /work/wt/h20d; do
    echo "round $r $t load $(cut -d' ' -f1-3 /proc/loadavg): $(cd $t && OMP_NUM_THREADS=1 PYTHONPATH=$t /work/main/.venv/bin/python $d/../tables-i20-speed2/speedn.py real learned 10)"
  done
done
