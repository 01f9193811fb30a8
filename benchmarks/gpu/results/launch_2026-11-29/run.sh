# The untuned picks that a kernel's launch cost taken from the device's log (`launch_ms.patch`, applied for this run and then reverted:
# 6.8 us on the H200, where `LAUNCH_MS` said 3) changes: 43 of the 82 GEMM shapes of
# ../shared/data/ (each predicted without its own logged trials; those the shipped log holds
# keep their own best in bench.py, so theirs do not change) and 4 of session 31's 12 held-out
# shapes. `old`: the tree with `launch = LAUNCH_MS`; `new`: as committed. Alternately, two rounds,
# one set a GPU on the 4-GPU host.
#   bash benchmarks/gpu/results/launch_2026-11-29/run.sh   (from the project root)
. benchmarks/gpu/gpu_env.sh >/dev/null 2>&1; export PYTHONWARNINGS=ignore
nvidia-smi -L
mkdir -p /tmp/old && cp -r tensorsched /tmp/old/
sed -i 's/    launch = launch_ms(limits.name, shapes) if limits.gpu else LAUNCH_MS/    launch = LAUNCH_MS/' /tmp/old/tensorsched/tune/model.py
grep -c "    launch = LAUNCH_MS$" /tmp/old/tensorsched/tune/model.py
S0=gemm:174,16,2381,gemm:1,1000,512,gemm:49,512,256,gemm:196,16,480,gemm:196,32,528,gemm:196,144,512,gemm:196,256,1152,gemm:729,128,1201,gemm:784,128,64,gemm:784,256,256,gemm:3136,192,576,gemm:12544,128,576
S1=gemm:124,110,1852,gemm:1,1024,2048,gemm:49,512,2304,gemm:196,24,508,gemm:196,112,512,gemm:196,160,508,gemm:196,320,1440,gemm:784,32,192,gemm:784,128,256,gemm:784,512,2304,gemm:3136,256,2304,gemm:12544,128,1152
S2=gemm:301,1800,71,gemm:49,256,832,gemm:49,1024,1024,gemm:196,24,512,gemm:196,128,512,gemm:196,160,528,gemm:196,512,256,gemm:784,96,192,gemm:784,128,576,gemm:3025,96,364,gemm:12544,32,27,gemm:50176,64,576
S3=gemm:98,5021,72,gemm:49,384,1728,gemm:169,384,2305,gemm:196,32,512,gemm:196,128,528,gemm:196,204,864,gemm:196,512,4608,gemm:784,96,800,gemm:784,128,1152,gemm:3136,64,64,gemm:12544,64,147
G=$(nvidia-smi -L | wc -l)
mkdir -p $OUT/runs
for i in 0 1 2 3; do eval W=\$S$i; gpu=$((i % G))
  ( export CUDA_VISIBLE_DEVICES=$gpu
    for round in 1 2; do for side in old new; do
      ( if [ $side = old ]; then export PYTHONPATH=/tmp/old:$PYTHONPATH; fi
        rm -rf /tmp/e$i$side; mkdir -p /tmp/e$i$side
        timeout 130 python benchmarks/gpu/bench.py --workloads $W --predict --skip acl,clblast,cuda-launch \
          --log-dir /tmp/e$i$side --repeat 10 --out $OUT/runs/${side}_${round}_gpu$i.txt \
          > $OUT/runs/${side}_${round}_gpu$i.log 2>&1 || echo "fail $i $side $round" )
    done; done ) &
done
wait
cd $OUT && tar czf launch_runs.tgz runs && rm -rf runs
