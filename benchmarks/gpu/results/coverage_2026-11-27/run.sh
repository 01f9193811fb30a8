# 60 s of model search on each of 20 GEMM shapes chosen to fill the gaps of the shipped H200
# log: `python benchmarks/gpu/cover_shapes.py LOG --avoid W --avoid-csv
# ../shared/data/acl_testdataset_gemm_shapes.acl_format.csv
# ../shared/data/gemm_shapes_from_layers.acl_format.csv --count 20`, LOG the shipped log at
# dbf2e6e, W the 28 GEMMs of ../overhang_2026-11-27/run.sh (kept unseen, as are the data's).
# Four GPUs of one host at once, one bench.py per GPU, each with 14 build processes (64 each,
# the default on this host, took 60-100 s to start four pools: 3 configs a shape measured).
# Run from the project root on the GPU host: bash benchmarks/gpu/results/coverage_2026-11-27/run.sh
. benchmarks/gpu/gpu_env.sh >/dev/null 2>&1; export PYTHONWARNINGS=ignore
nvidia-smi -L
S0=gemm:8096,6402,18,gemm:6561,8,7303,gemm:10,7054,16,gemm:11,126,933,gemm:16,397,7626
S1=gemm:8,17,8159,gemm:214,8,8132,gemm:453,5051,22,gemm:6976,6019,285,gemm:20,3439,772
S2=gemm:240,252,19,gemm:6171,256,17,gemm:234,10,444,gemm:845,28,54,gemm:2340,1399,69
S3=gemm:7023,8,21,gemm:12,811,111,gemm:22,8061,7047,gemm:82,88,177,gemm:122,956,119
for i in 0 1 2 3; do eval W=\$S$i; mkdir -p $OUT/logs $OUT/runs
  CUDA_VISIBLE_DEVICES=$i timeout 450 python benchmarks/gpu/bench.py --workloads $W --trials 100000 --time 60s --build-workers 14 \
    --skip acl,clblast,cuda-launch --log-dir $OUT/logs --repeat 10 --out $OUT/runs/tuned60_gpu$i.txt > $OUT/runs/tuned60_gpu$i.log 2>&1 &
done
wait
grep -hE "^(GEMM|conv) .*\|" $OUT/runs/tuned60_gpu*.txt
cd $OUT && tar czf tuned60_logs.tgz logs runs && rm -rf logs runs
