# featir.sh TREE: instructions per median sheet of each piece of sheet_features (featir.py)
d=$(cd $(dirname $0) && pwd)
ir() { PYTHONHASHSEED=0 OMP_NUM_THREADS=1 PYTHONPATH=$1 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
       /work/main/.venv/bin/python $d/featir.py $2 $3 2>&1 | grep "I *refs" | tr -d ',' | awk '{print $NF}'; }
for p in whole text upper sums neigh; do a=$(ir $1 $p 0); b=$(ir $1 $p 5); echo "$p $(( (b - a) / 30 ))"; done
