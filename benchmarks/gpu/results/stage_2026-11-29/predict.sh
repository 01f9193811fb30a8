# The untuned prediction of the eight matrix-vector products of ../shared/data/ (in no shipped
# log) from the H200's shipped log before (`old`: its first 13005 records, as before this folder's
# five matrix-vector logs were added) and after (`new`) they were
# shipped; both with the `stage` knob. Two rounds, old then new, each against cuBLAS.
#   bash benchmarks/gpu/results/stage_2026-11-29/predict.sh   (from the project root)
. benchmarks/gpu/gpu_env.sh >/dev/null 2>&1; export PYTHONWARNINGS=ignore
nvidia-smi -L
mkdir -p /tmp/old && cp -r tensorsched /tmp/old/ && head -13005 tensorsched/tune/logs/nvidia-cuda-nvidia-h200.jsonl > /tmp/old/tensorsched/tune/logs/nvidia-cuda-nvidia-h200.jsonl
W=gemm:1,1000,512,gemm:1,1000,1024,gemm:1,1000,4096,gemm:1,1008,1024,gemm:1,1024,2048,gemm:1,4096,4096,gemm:1,4096,9216,gemm:1,4096,25088
for round in 1 2; do
  for side in old new; do
    ( if [ $side = old ]; then export PYTHONPATH=/tmp/old:$PYTHONPATH; fi
      python -c "import tensorsched.tune.model as m; print('$side', m.__file__)"
      rm -rf /tmp/e$side; mkdir -p /tmp/e$side
      timeout 140 python benchmarks/gpu/bench.py --workloads $W --predict \
        --skip acl,clblast,cuda-launch --log-dir /tmp/e$side --repeat 10 \
        --out $OUT/predict_${side}_${round}_h200.txt > $OUT/predict_${side}_${round}.log 2>&1 \
        || echo "fail $side $round" )
  done
done
for f in $OUT/predict_*_h200.txt; do echo "== $f"; grep -E "^(GEMM|conv) .*\|" $f; done
