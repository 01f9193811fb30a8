# third run of the 3xTF32 probe: elements split once when stored to __local memory (ps*),
# against the best accurate variant of run 2 (128x256k8w64x64, 3c)
# bash benchmarks/gpu/results/mma_probe_2026-11-27/run3.sh
. benchmarks/gpu/gpu_env.sh >/dev/null 2>&1; export PYTHONWARNINGS=ignore
V=ps128x128w64x32c2,ps128x128w64x64c2,ps128x128w32x64c2,ps128x128w64x32c4,ps64x128w32x64c2,ps128x64w64x32c2
timeout 250 python benchmarks/gpu/mma_probe.py 1024,1024,1024 4096,4096,4096 8192,8192,8192 2048,2048,2048 --variants $V --passes 3 2>&1 | tee $OUT/mma_presplit.txt
timeout 150 python benchmarks/gpu/mma_probe.py 4096,4096,4096 8192,8192,8192 --variants 128x256k8w64x64 --passes 3c 2>&1 | tee $OUT/mma_presplit_base.txt
