# Sixteen mid-size GEMM shapes (0.3-20 GFLOP) chosen to fill the shipped H200 log's gaps:
#   python benchmarks/gpu/cover_shapes.py tensorsched/tune/logs/nvidia-cuda-nvidia-h200.jsonl \
#     --avoid W1,W2,CV --avoid-csv ../shared/data/acl_testdataset_gemm_shapes.acl_format.csv \
#     ../shared/data/gemm_shapes_from_layers.acl_format.csv --count 16 --gflop 0.3,20
# (W1, W2: the 28 unseen GEMMs below; CV: the GEMM views of the 10 unseen convs; all kept unseen)
# then, in the same call on the 4-GPU H200 host:
# 1. each tuned 65 s by model search from the shipped log, four at once (one bench.py a GPU,
#    14 build processes each);
# 2. their logs shipped into a copy of the tree (scripts/ship_logs.py --best 60 --every 20);
# 3. the 28 GEMMs and 10 convs no log holds predicted untuned from the shipped log before (old)
#    and after (new), alternately twice, each GPU a quarter of them.
# Run from the project root on the GPU host: bash benchmarks/gpu/results/coverage2_2026-11-27/run.sh
. benchmarks/gpu/gpu_env.sh >/dev/null 2>&1; export PYTHONWARNINGS=ignore
nvidia-smi -L
S0=gemm:1170,26,5697,gemm:6916,65,8067,gemm:1168,8124,129,gemm:7600,316,113
S1=gemm:8015,1401,884,gemm:54,1650,7423,gemm:8053,17,1117,gemm:144,8139,7989
S2=gemm:243,4548,141,gemm:1036,7716,1222,gemm:62,7271,1969,gemm:7653,1230,22
S3=gemm:1970,8012,30,gemm:7811,1297,187,gemm:1099,701,201,gemm:2905,59,2495
mkdir -p $OUT/logs $OUT/runs
for i in 0 1 2 3; do eval W=\$S$i
  CUDA_VISIBLE_DEVICES=$i timeout 340 python benchmarks/gpu/bench.py --workloads $W --trials 100000 --time 65s --build-workers 14 \
    --skip acl,clblast,cuda-launch --log-dir $OUT/logs --repeat 10 --out $OUT/runs/tuned65_gpu$i.txt > $OUT/runs/tuned65_gpu$i.log 2>&1 &
done
wait
grep -hE "^(GEMM|conv) .*\|" $OUT/runs/tuned65_gpu*.txt
(cd $OUT && tar czf tuned65_logs.tgz logs runs)
L=tensorsched/tune/logs/nvidia-cuda-nvidia-h200.jsonl
rm -rf /tmp/old /tmp/new; mkdir -p /tmp/old /tmp/new
cp -r benchmarks tensorsched scripts /tmp/old/; cp -r benchmarks tensorsched scripts /tmp/new/
(cd /tmp/new && python scripts/ship_logs.py $OUT/logs/*.jsonl --best 60 --every 20) | tail -3
wc -l /tmp/old/$L /tmp/new/$L
P0=gemm:1778,827,41,gemm:4531,172,1527,gemm:426,275,749,gemm:19,4277,1104,gemm:2240,84,6188,gemm:54,1142,4509,gemm:2364,98,234,conv:1,3,299,299,32,3,3,2,0,conv:1,48,35,35,64,5,5,1,2,conv:1,3,224,224,64,11,11,4,2
P1=gemm:415,3333,983,gemm:1138,1788,2261,gemm:99,323,3157,gemm:371,1043,4927,gemm:4822,731,39,gemm:532,1170,192,gemm:1336,229,211,conv:1,96,27,27,256,5,5,1,2,conv:1,256,13,13,384,3,3,1,1
P2=gemm:25,44,1622,gemm:138,4875,464,gemm:1215,318,127,gemm:93,6,773,gemm:20,68,1137,gemm:647,52,1056,gemm:201,3279,1089,conv:2,64,28,28,96,3,3,1,1,conv:1,192,35,35,64,1,1,1,0
P3=gemm:3395,11,672,gemm:1500,190,4195,gemm:1964,359,1207,gemm:10,5524,626,gemm:9,581,90,gemm:74,1336,31,gemm:127,129,131,conv:1,512,7,7,512,3,3,1,1,conv:1,128,28,28,256,3,3,2,1,conv:1,17,31,29,5,3,3,2,1
for i in 0 1 2 3; do eval W=\$P$i
  ( for r in 1 2; do for v in old new; do rm -rf /tmp/e$i; mkdir -p /tmp/e$i
      (cd /tmp/$v && CUDA_VISIBLE_DEVICES=$i PYTHONPATH=/tmp/site:/tmp/$v timeout 85 python benchmarks/gpu/bench.py --workloads $W --predict \
        --skip acl,clblast,cuda-launch --log-dir /tmp/e$i --repeat 10 --out $OUT/runs/predict_${v}_${r}_gpu$i.txt > /dev/null 2>&1) || echo "fail $v $r $i"
    done; done ) &
done
wait
grep -E "^(GEMM|conv) .*\|" $OUT/runs/predict_*.txt | sort -t: -k2 | head -200
cp /tmp/new/$L $OUT/shipped_new.jsonl
cd $OUT && tar czf predict_runs.tgz runs shipped_new.jsonl && rm -rf logs runs shipped_new.jsonl
