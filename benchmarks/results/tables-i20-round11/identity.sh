# identity.sh TREE BASE_DUMP OUT: fulldump.py of TREE into OUT, then compared with BASE_DUMP (fulldump.py run on
# /work/base-main) field by field (fullcmp.py) and byte for byte
d=$(cd $(dirname $0)/../tables-i20-speed2 && pwd)
(cd $1 && OMP_NUM_THREADS=1 PYTHONPATH=$1 /work/main/.venv/bin/python $d/fulldump.py $3)
/work/main/.venv/bin/python $d/fullcmp.py $2 $3
cmp <(zcat $2) <(zcat $3) && echo byte-identical
