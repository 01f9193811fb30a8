# The model search proposing ahead in a thread (commit 19dccfa, "new") against the search
# before it (9cb4357, "old"), side by side on the 2-GPU H200 host: the same four held-out GEMM
# shapes (no log holds them; session 31's run2/run3) tuned 85 s each from the shipped log,
# old on GPU 0 and new on GPU 1 at once, 14 build workers each (16 of the host's 32 cores).
# Each tree is a `git archive` of its commit into ab/old and ab/new (untracked, carried):
#   rm -rf ab && mkdir -p ab/old ab/new && git archive 9cb4357 tensorsched | tar -x -C ab/old \
#     && git archive 19dccfa tensorsched | tar -x -C ab/new \
#     && rm -rf ab/*/tensorsched/tune/logs   (the shipped logs, the same in both, copied below)
# Run from the project root: bash benchmarks/gpu/results/ahead_2026-11-29/run.sh
. benchmarks/gpu/gpu_env.sh >/dev/null 2>&1; export PYTHONWARNINGS=ignore
nvidia-smi -L
for side in old new; do cp -r tensorsched/tune/logs ab/$side/tensorsched/tune/; done
W=${W:-gemm:276,1437,1058,gemm:2155,148,3349,gemm:83,1400,474,gemm:2162,582,239}
mkdir -p $OUT/logs_old $OUT/logs_new $OUT/runs
i=0
for side in old new; do
  ( CUDA_VISIBLE_DEVICES=$i PYTHONPATH=/tmp/site:$PWD/ab/$side timeout 560 python benchmarks/gpu/bench.py \
      --workloads $W --trials 100000 --time 85s --build-workers 14 --skip acl,clblast,cuda-launch \
      --log-dir $OUT/logs_$side --repeat 10 --out $OUT/runs/tuned_$side.txt > $OUT/runs/tuned_$side.log 2>&1 \
      || echo "fail $side" ) &
  i=$((i + 1))
done
wait
grep -h "configs measured" $OUT/runs/tuned_*.log
grep -hE "^(GEMM|conv) .*\|" $OUT/runs/tuned_old.txt $OUT/runs/tuned_new.txt
cd $OUT && tar czf ${TGZ:-run1_ab.tgz} logs_old logs_new runs && rm -rf logs_old logs_new runs
