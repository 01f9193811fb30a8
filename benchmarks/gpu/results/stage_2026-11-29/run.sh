# Operands read straight from global memory (gpu_tiled's `stage` knob) on matrix-vector
# products: each shape tuned 45 s by model search from the shipped log (a fresh log folder),
# timed against cuBLAS; then stage_probe.py times, side by side, the shipped log's best, the
# new log's best, the new log's best of each `stage` value, and the best's tiles without
# __local tiles.
#   bash benchmarks/gpu/results/stage_2026-11-29/run.sh W1,W2,... TAG   (from the project root)
. benchmarks/gpu/gpu_env.sh >/dev/null 2>&1; export PYTHONWARNINGS=ignore
nvidia-smi -L
mkdir -p $OUT/logs_$2
timeout 400 python benchmarks/gpu/bench.py --workloads $1 --trials 100000 --time 45s \
  --skip acl,clblast,cuda-launch --log-dir $OUT/logs_$2 --repeat 10 \
  --out $OUT/tuned_$2_h200.txt > $OUT/tuned_$2.log 2>&1 || echo "bench failed"
grep -E "tuned gemm|^GEMM .*\|" $OUT/tuned_$2_h200.txt
timeout 170 python benchmarks/gpu/stage_probe.py tensorsched/tune/logs/nvidia-cuda-nvidia-h200.jsonl \
  $OUT/logs_$2/*.jsonl > $OUT/stage_probe_$2.txt 2>&1 || echo "probe failed"
cat $OUT/stage_probe_$2.txt
