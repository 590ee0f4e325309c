# speed.sh ROUNDS TREE: speedn.py real learned 10, base (/work/base-main) and TREE alternating, ROUNDS rounds
d=$(cd $(dirname $0) && pwd)
for r in $(seq 1 ${1:-2}); do
  for t in /work/base-main $2; do
    echo "round $r $t load $(cut -d' ' -f1-3 /proc/loadavg): $(cd $t && OMP_NUM_THREADS=1 PYTHONPATH=$t /work/main/.venv/bin/python $d/../tables-i20-speed2/speedn.py real learned 10)"
  done
done
