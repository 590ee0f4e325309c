# snapshot.sh COMMIT: the code of COMMIT (airflow_sbcrawl, sbcrawl_dev) in /tmp/h20e/tree-COMMIT, for measuring it
set -e
out=/tmp/h20e/tree-$1
rm -rf $out && mkdir -p $out
git -C "$(git -C $(dirname $0) rev-parse --show-toplevel)" archive $1 airflow_sbcrawl sbcrawl_dev | tar -x -C $out
echo $out
