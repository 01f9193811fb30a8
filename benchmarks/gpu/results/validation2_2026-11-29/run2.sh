# Second call, on the 4-GPU H200 host, one set a GPU:
# 1. the untuned prediction of 12 held-out GEMM shapes (gen_shapes.py 32 12) from the shipped
#    log before (`old`: its first 13563 records) and after (`new`) run.sh's 16 logs were
#    shipped, alternately, two rounds;
# 2. four convolutions no log holds (batch 1), predicted untuned, then tuned 100 s each by
#    model search from the shipped log.
# Run from the project root on the GPU host: bash benchmarks/gpu/results/validation2_2026-11-29/run2.sh
. benchmarks/gpu/gpu_env.sh >/dev/null 2>&1; export PYTHONWARNINGS=ignore
nvidia-smi -L
mkdir -p /tmp/old && cp -r tensorsched /tmp/old/ && head -13563 tensorsched/tune/logs/nvidia-cuda-nvidia-h200.jsonl > /tmp/old/tensorsched/tune/logs/nvidia-cuda-nvidia-h200.jsonl
H0=gemm:174,16,2381,gemm:124,110,1852,gemm:8,1210,7857
H1=gemm:301,1800,71,gemm:83,1400,474,gemm:276,1437,1058
H2=gemm:2155,148,3349,gemm:362,36,369,gemm:679,33,2947
H3=gemm:98,5021,72,gemm:2162,582,239,gemm:14,1484,1291
C0=conv:1,80,73,73,192,3,3,1,0
C1=conv:1,24,56,56,144,1,1,1,0
C2=conv:1,32,150,150,64,3,3,1,1
C3=conv:1,384,13,13,256,3,3,1,1
G=$(nvidia-smi -L | wc -l)
mkdir -p $OUT/logs $OUT/runs
for i in 0 1 2 3; do eval H=\$H$i; eval C=\$C$i; gpu=$((i % G))
  ( export CUDA_VISIBLE_DEVICES=$gpu
    for round in 1 2; do for side in old new; do
      ( if [ $side = old ]; then export PYTHONPATH=/tmp/old:$PYTHONPATH; fi
        rm -rf /tmp/e$i$side; mkdir -p /tmp/e$i$side
        timeout 80 python benchmarks/gpu/bench.py --workloads $H --predict --skip acl,clblast,cuda-launch \
          --log-dir /tmp/e$i$side --repeat 10 --out $OUT/runs/held_${side}_${round}_gpu$i.txt \
          > $OUT/runs/held_${side}_${round}_gpu$i.log 2>&1 || echo "held fail $i $side $round" )
    done; done
    mkdir -p /tmp/c$i
    timeout 60 python benchmarks/gpu/bench.py --workloads $C --predict --skip acl,clblast,cuda-launch \
      --log-dir /tmp/c$i --repeat 10 --out $OUT/runs/conv_predict_gpu$i.txt > $OUT/runs/conv_predict_gpu$i.log 2>&1 || echo "conv predict fail $i"
    timeout 200 python benchmarks/gpu/bench.py --workloads $C --trials 100000 --time 100s --build-workers 14 \
      --skip acl,clblast,cuda-launch --log-dir $OUT/logs --repeat 10 --out $OUT/runs/conv_tuned_gpu$i.txt \
      > $OUT/runs/conv_tuned_gpu$i.log 2>&1 || echo "conv tune fail $i" ) &
done
wait
for f in $OUT/runs/*.txt; do echo "== $(basename $f)"; grep -E "^(GEMM|conv) .*\|" $f; done
cd $OUT && tar czf validation2_run2.tgz logs runs && rm -rf logs runs
