# The headline table and the three networks at HEAD b480c14 (untuned networks; the committed GEMM/conv logs)
# bash benchmarks/gpu/results/headline_2026-11-27/run.sh  (GPU host, .whl carried)
. benchmarks/gpu/gpu_env.sh >/dev/null 2>&1; export PYTHONWARNINGS=ignore
python benchmarks/gpu/bench.py --skip acl,clblast --repeat 10 --out $OUT/bench_h200.txt
python benchmarks/networks.py --repeat 50 --no-acl > $OUT/networks_h200.txt 2>&1
