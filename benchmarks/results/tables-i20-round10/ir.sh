# ir.sh TREE: instructions (valgrind cachegrind Ir) of 5 detections of each median sheet, net of the 0-run start
d=$(cd $(dirname $0) && pwd)
ir() { PYTHONHASHSEED=0 OMP_NUM_THREADS=1 PYTHONPATH=$1 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
       /work/main/.venv/bin/python $d/ir.py $2 2>&1 | grep "I *refs" | tr -d ',' | awk '{print $NF}'; }
a=$(ir $1 0); b=$(ir $1 5); echo "$1 Ir per sheet-detection (30 = 5 x 6 sheets): $(( (b - a) / 30 ))"
