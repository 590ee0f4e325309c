# treeir.sh TREE: instructions per median sheet of the role and start trees alone (treeir.py)
d=$(cd $(dirname $0) && pwd)
ir() { PYTHONHASHSEED=0 OMP_NUM_THREADS=1 PYTHONPATH=$1 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
       /work/main/.venv/bin/python $d/treeir.py $2 2>&1 | grep "I *refs" | tr -d ',' | awk '{print $NF}'; }
a=$(ir $1 0); b=$(ir $1 5); echo "$1 trees' Ir per median sheet: $(( (b - a) / 30 ))"
