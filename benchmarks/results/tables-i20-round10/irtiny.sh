# irtiny.sh TREE: instructions of one detection of the 5-line sheet (30 detections, net of the 0-run start)
d=$(cd $(dirname $0) && pwd)
ir() { PYTHONHASHSEED=0 OMP_NUM_THREADS=1 PYTHONPATH=$1 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
       /work/main/.venv/bin/python $d/irtiny.py $2 2>&1 | grep "I *refs" | tr -d ',' | awk '{print $NF}'; }
a=$(ir $1 0); b=$(ir $1 30); echo "$1 Ir per detection of the 5-line sheet: $(( (b - a) / 30 ))"
