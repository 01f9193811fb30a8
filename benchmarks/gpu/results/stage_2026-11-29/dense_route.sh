# VGG-16 at batch 1 and a dense-only graph at 1-8 rows, with few-row dense layers on the
# matrix-vector template (`old`: graph/tasks.py as at this folder's first commit, carried as
# .whl/tasks_old.py) and on the GEMM template where the logs hold GEMMs of as few rows
# (`new`), alternating, two rounds.
#   bash benchmarks/gpu/results/stage_2026-11-29/dense_route.sh   (from the project root)
. benchmarks/gpu/gpu_env.sh >/dev/null 2>&1; export PYTHONWARNINGS=ignore
mkdir -p /tmp/old && cp -r tensorsched /tmp/old/ && cp .whl/tasks_old.py /tmp/old/tensorsched/graph/tasks.py
for round in 1 2; do
  for side in old new; do
    ( if [ $side = old ]; then export PYTHONPATH=/tmp/old:$PYTHONPATH; fi
      timeout 120 python benchmarks/networks.py --models vgg16 --no-acl --no-torch --repeat 50 \
        2>&1 | grep -E "^vgg16 +\| tensorsched" | sed "s/^/$side $round: /"
      timeout 60 python benchmarks/gpu/results/stage_2026-11-29/dense_graph.py | sed "s/^/$side $round: /" )
  done
done
