W1=gemm:1778,827,41,gemm:4531,172,1527,gemm:426,275,749,gemm:19,4277,1104,gemm:2240,84,6188,gemm:54,1142,4509,gemm:2364,98,234,gemm:415,3333,983,gemm:1138,1788,2261,gemm:99,323,3157,gemm:371,1043,4927,gemm:4822,731,39,gemm:532,1170,192,gemm:1336,229,211,conv:1,3,299,299,32,3,3,2,0,conv:1,48,35,35,64,5,5,1,2,conv:1,3,224,224,64,11,11,4,2,conv:1,96,27,27,256,5,5,1,2,conv:1,256,13,13,384,3,3,1,1,conv:2,64,28,28,96,3,3,1,1,conv:1,192,35,35,64,1,1,1,0,conv:1,512,7,7,512,3,3,1,1,conv:1,128,28,28,256,3,3,2,1
W2=gemm:25,44,1622,gemm:138,4875,464,gemm:1215,318,127,gemm:93,6,773,gemm:20,68,1137,gemm:647,52,1056,gemm:201,3279,1089,gemm:3395,11,672,gemm:1500,190,4195,gemm:1964,359,1207,gemm:10,5524,626,gemm:9,581,90,gemm:74,1336,31,gemm:127,129,131,conv:1,17,31,29,5,3,3,2,1
T=gemm:19,4277,1104,gemm:371,1043,4927,gemm:532,1170,192,conv:1,3,224,224,64,7,7,2,3,conv:1,512,7,7,512,3,3,1,1
cd .snap2 && ln -sfn ../.whl .whl && . benchmarks/gpu/gpu_env.sh >/dev/null 2>&1; export PYTHONWARNINGS=ignore
for w in 1 2; do eval W=\$W$w; rm -rf /tmp/e; mkdir -p /tmp/e
  timeout 200 python benchmarks/gpu/bench.py --workloads $W --predict --skip acl,clblast,cuda-launch --log-dir /tmp/e --repeat 10 --out $OUT/predict_w${w}_h200.txt > $OUT/predict_w${w}.log 2>&1 || echo "fail $w"
  grep -E "^(GEMM|conv) .*\|" $OUT/predict_w${w}_h200.txt
done
mkdir -p $OUT/logs
timeout 380 python benchmarks/gpu/bench.py --workloads $T --trials 100000 --time 55s --skip acl,clblast,cuda-launch --log-dir $OUT/logs --repeat 10 --out $OUT/tuned55_h200.txt > $OUT/tuned55.log 2>&1 || echo "fail tuned"
grep -E "^(GEMM|conv) .*\|" $OUT/tuned55_h200.txt; cd $OUT && tar czf tuned55_logs.tgz logs && rm -rf logs
