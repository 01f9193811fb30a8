# second run of the 3xTF32 probe: each K step's products summed apart (3c), for accuracy
# bash benchmarks/gpu/results/mma_probe_2026-11-27/run2.sh
. benchmarks/gpu/gpu_env.sh >/dev/null 2>&1; export PYTHONWARNINGS=ignore
V=128x128k16w64x32,128x128k16w64x64,128x256k8w64x64,64x64k16w32x32
timeout 400 python benchmarks/gpu/mma_probe.py 1024,1024,1024 4096,4096,4096 8192,8192,8192 --variants $V --passes 3,3c 2>&1 | tee $OUT/mma_chunk.txt
