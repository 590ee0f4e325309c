# stepir.sh TREE [tiny]: instructions per detection spent in each step (stepir.py), median sheets or the 5-line sheet
d=$(cd $(dirname $0) && pwd)
ir() { PYTHONHASHSEED=0 OMP_NUM_THREADS=1 PYTHONPATH=$1 valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null \
       /work/main/.venv/bin/python $d/stepir.py $2 $3 $4 2>&1 | grep "I *refs" | tr -d ',' | awk '{print $NF}'; }
n=5; per=30; [ -n "$2" ] && n=30
base=$(ir $1 10 0 $2); prev=$(( $(ir $1 0 $n $2) - base ))
echo "step 0 grid $(( prev / per ))"
names=(grid cells cell_kinds blocks+zero_markers sheet_features classify decide find+final refine_classes rule_headers build_table)
for s in 1 2 3 4 5 6 7 8 9 10; do
  cur=$(( $(ir $1 $s $n $2) - base )); echo "step $s ${names[$s]} $(( (cur - prev) / per ))"; prev=$cur
done
echo "total $(( prev / per ))"
