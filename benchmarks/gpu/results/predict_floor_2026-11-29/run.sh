# The untuned prediction on the GPU with and without session 29's memory floor (which main
# keeps off on a GPU): `old` is main at the commit of this folder, `new` the same with the
# floor on for a GPU too (counting only the argument tensors' bytes, since SPLIT_BYTE_MS
# already prices split-K's partial products there): its model.py carried as
# .whl/variant_model.py and copied over a copy of the package in /tmp/new.
# The workloads are those whose picks the floor changes on the H200's shipped log (two of
# session 19's convs, four matrix-vector-like GEMMs), each predicted from the shipped log
# (an empty log folder) and timed against cuBLAS/cuDNN, two rounds, old then new.
#   bash benchmarks/gpu/results/predict_floor_2026-11-29/run.sh   (from the project root)
. benchmarks/gpu/gpu_env.sh >/dev/null 2>&1; export PYTHONWARNINGS=ignore
nvidia-smi -L
mkdir -p /tmp/new && cp -r tensorsched /tmp/new/ && cp .whl/variant_model.py /tmp/new/tensorsched/tune/model.py
W=conv:1,512,7,7,512,3,3,1,1,conv:1,128,28,28,256,3,3,2,1,gemm:1,4096,4096,gemm:1,4096,25088,gemm:1,2048,2048,gemm:4,8192,8192
for round in 1 2; do
  for side in old new; do
    ( if [ $side = new ]; then export PYTHONPATH=/tmp/new:$PYTHONPATH; fi
      python -c "import tensorsched.tune.model as m; print('$side', m.__file__)"
      rm -rf /tmp/e$side; mkdir -p /tmp/e$side
      timeout 140 python benchmarks/gpu/bench.py --workloads $W --predict \
        --skip acl,clblast,cuda-launch --log-dir /tmp/e$side --repeat 10 \
        --out $OUT/predict_${side}_${round}_h200.txt > $OUT/predict_${side}_${round}.log 2>&1 \
        || echo "fail $side $round" )
  done
done
for f in $OUT/predict_*_h200.txt; do echo "== $f"; grep -E "^(GEMM|conv) .*\|" $f; done
