# 24 GEMM shapes drawn at random (gen_shapes.py beside this file, seed 20261127+22: M, N
# log-uniform 8-8192, K 16-8192, 2 MFLOP-120 GFLOP, kept 0.5 log2 away from the 28 unseen GEMMs,
# the 10 unseen convs' GEMM views and ../shared/data), the same distribution as the 28 unseen
# GEMMs and as near to the shipped log (median log2-distance 1.35 against 1.25). On the 4-GPU
# H200 host (or two calls on a 2-GPU host: `run.sh 0 1`, then `run.sh 2 3`), one set a GPU:
# 1. predicted untuned from the shipped log (an empty log folder);
# 2. tuned 60 s each by model search from the shipped log (logs kept for predict_loo.py, not
#    shipped by this script).
# Run from the project root on the GPU host: bash benchmarks/gpu/results/validation_2026-11-27/run.sh [SETS]
. benchmarks/gpu/gpu_env.sh >/dev/null 2>&1; export PYTHONWARNINGS=ignore
nvidia-smi -L
V0=gemm:40,3437,333,gemm:461,4561,51,gemm:3888,23,6248,gemm:3921,42,4586,gemm:338,1212,2638,gemm:102,412,50
V1=gemm:8156,355,61,gemm:7373,2441,36,gemm:73,4614,25,gemm:32,2691,22,gemm:1682,15,3161,gemm:139,1502,2803
V2=gemm:2662,9,221,gemm:3875,64,268,gemm:604,4829,1832,gemm:101,262,305,gemm:1574,1170,244,gemm:179,11,2923
V3=gemm:20,813,240,gemm:353,2126,45,gemm:15,1201,8169,gemm:378,1256,1619,gemm:3963,5712,2400,gemm:2063,522,39
SETS=${*:-0 1 2 3}; G=$(nvidia-smi -L | wc -l)
mkdir -p $OUT/logs $OUT/runs
for i in $SETS; do eval W=\$V$i; gpu=$((i % G))
  ( mkdir -p /tmp/e$i
    CUDA_VISIBLE_DEVICES=$gpu timeout 110 python benchmarks/gpu/bench.py --workloads $W --predict \
      --skip acl,clblast,cuda-launch --log-dir /tmp/e$i --repeat 10 --out $OUT/runs/predict_gpu$i.txt > $OUT/runs/predict_gpu$i.log 2>&1 || echo "predict fail $i"
    CUDA_VISIBLE_DEVICES=$gpu timeout 450 python benchmarks/gpu/bench.py --workloads $W --trials 100000 --time 60s --build-workers 14 \
      --skip acl,clblast,cuda-launch --log-dir $OUT/logs --repeat 10 --out $OUT/runs/tuned60_gpu$i.txt > $OUT/runs/tuned60_gpu$i.log 2>&1 || echo "tune fail $i" ) &
done
wait
grep -hE "^(GEMM|conv) .*\|" $OUT/runs/predict_gpu*.txt $OUT/runs/tuned60_gpu*.txt
cd $OUT && tar czf validation_logs_$(echo $SETS | tr -d ' ').tgz logs runs && rm -rf logs runs
