# Third call, on the 4-GPU H200 host: run2.sh's 12 held-out GEMMs tuned 85 s each by model search
# from the shipped log (at 15f84c1, with run.sh's 16 shapes shipped), three a GPU. Their untuned
# figures are run2.sh's `new` rounds.
# Run from the project root on the GPU host: bash benchmarks/gpu/results/validation2_2026-11-29/run3.sh
. benchmarks/gpu/gpu_env.sh >/dev/null 2>&1; export PYTHONWARNINGS=ignore
nvidia-smi -L
H0=gemm:174,16,2381,gemm:124,110,1852,gemm:8,1210,7857
H1=gemm:301,1800,71,gemm:83,1400,474,gemm:276,1437,1058
H2=gemm:2155,148,3349,gemm:362,36,369,gemm:679,33,2947
H3=gemm:98,5021,72,gemm:2162,582,239,gemm:14,1484,1291
G=$(nvidia-smi -L | wc -l)
mkdir -p $OUT/logs $OUT/runs
for i in 0 1 2 3; do eval H=\$H$i; gpu=$((i % G))
  CUDA_VISIBLE_DEVICES=$gpu timeout 500 python benchmarks/gpu/bench.py --workloads $H --trials 100000 --time 85s \
    --build-workers 14 --skip acl,clblast,cuda-launch --log-dir $OUT/logs --repeat 10 \
    --out $OUT/runs/held_tuned_gpu$i.txt > $OUT/runs/held_tuned_gpu$i.log 2>&1 || echo "tune fail $i" &
done
wait
grep -hE "^(GEMM|conv) .*\|" $OUT/runs/held_tuned_gpu*.txt
cd $OUT && tar czf validation2_run3.tgz logs runs && rm -rf logs runs
