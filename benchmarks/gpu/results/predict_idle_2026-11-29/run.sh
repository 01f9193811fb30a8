# The untuned prediction on the GPU before and after the IR features counted the work-items a
# guard leaves idle as idle (e8dad14; before: 31548fd), one after the other on one H200: the
# 28 GEMMs and 11 convs of session 19's untuned measurement (overhang_2026-11-27/run.sh's W1
# and W2, in no shipped log), each predicted from the shipped log (an empty log folder),
# against cuBLAS/cuDNN. Run from the project root with `old_s27/` holding 31548fd's
# features.py, model.py and gemm_cpu.py: bash .../predict_idle_2026-11-29/run.sh 1 (W1), then
# ... 2 (W2)
. benchmarks/gpu/gpu_env.sh >/dev/null 2>&1; export PYTHONWARNINGS=ignore
nvidia-smi -L
mkdir -p /tmp/old && cp -r tensorsched /tmp/old/ && cp -r old_s27/tensorsched /tmp/old/
H=overhang_2026-11-27/run.sh
W1=$(grep '^W1=' benchmarks/gpu/results/$H | cut -d= -f2); W2=$(grep '^W2=' benchmarks/gpu/results/$H | cut -d= -f2)
w=$1; eval W=\$W$w
for side in old new; do
  ( if [ $side = old ]; then export PYTHONPATH=/tmp/old:$PYTHONPATH; fi
    (cd benchmarks/gpu && python -c "import tensorsched.tune.features as f; print('$side', f.__file__, hasattr(f, 'pass_fraction'))")
    rm -rf /tmp/e$side; mkdir -p /tmp/e$side
    timeout 270 python benchmarks/gpu/bench.py --workloads $W --predict \
      --skip acl,clblast,cuda-launch --log-dir /tmp/e$side --repeat 10 \
      --out $OUT/predict_${side}_w${w}_h200.txt > $OUT/predict_${side}_w${w}.log 2>&1 || echo "fail $side $w" )
done
for f in $OUT/predict_*_h200.txt; do echo "== $f"; grep -E "^(GEMM|conv) .*\|" $f; done
