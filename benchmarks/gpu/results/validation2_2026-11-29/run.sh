# 16 GEMM shapes drawn at random (gen_shapes.py beside this file), the distribution of session
# 22's validation shapes, no log holding them. On the 4-GPU H200 host, one set a GPU:
# 1. predicted untuned from the shipped log (an empty log folder);
# 2. tuned 85 s each by model search from the shipped log (logs kept, in the .tgz).
# Run from the project root on the GPU host: bash benchmarks/gpu/results/validation2_2026-11-29/run.sh [SETS]
. benchmarks/gpu/gpu_env.sh >/dev/null 2>&1; export PYTHONWARNINGS=ignore
nvidia-smi -L
V0=gemm:66,819,1175,gemm:4739,11,345,gemm:602,11,2680,gemm:3684,7030,1667
V1=gemm:38,673,1297,gemm:366,282,2188,gemm:107,1183,2220,gemm:3363,4384,30
V2=gemm:5228,358,118,gemm:12,189,473,gemm:83,101,736,gemm:9,1343,170
V3=gemm:45,1299,108,gemm:20,13,4373,gemm:2682,1318,289,gemm:37,31,1816
SETS=${*:-0 1 2 3}; G=$(nvidia-smi -L | wc -l)
mkdir -p $OUT/logs $OUT/runs
for i in $SETS; do eval W=\$V$i; gpu=$((i % G))
  ( mkdir -p /tmp/e$i
    CUDA_VISIBLE_DEVICES=$gpu timeout 80 python benchmarks/gpu/bench.py --workloads $W --predict \
      --skip acl,clblast,cuda-launch --log-dir /tmp/e$i --repeat 10 --out $OUT/runs/predict_gpu$i.txt > $OUT/runs/predict_gpu$i.log 2>&1 || echo "predict fail $i"
    CUDA_VISIBLE_DEVICES=$gpu timeout 480 python benchmarks/gpu/bench.py --workloads $W --trials 100000 --time 85s --build-workers 14 \
      --skip acl,clblast,cuda-launch --log-dir $OUT/logs --repeat 10 --out $OUT/runs/tuned_gpu$i.txt > $OUT/runs/tuned_gpu$i.log 2>&1 || echo "tune fail $i" ) &
done
wait
grep -hE "^(GEMM|conv) .*\|" $OUT/runs/predict_gpu*.txt $OUT/runs/tuned_gpu*.txt
cd $OUT && tar czf validation2_logs_$(echo $SETS | tr -d ' ').tgz logs runs && rm -rf logs runs
