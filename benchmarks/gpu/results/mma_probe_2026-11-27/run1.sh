# first run of the 3xTF32 probe: the fragment layout (a1/a2 swapped or not), then eight tilings on eight shapes
# bash benchmarks/gpu/results/mma_probe_2026-11-27/run1.sh
. benchmarks/gpu/gpu_env.sh >/dev/null 2>&1; export PYTHONWARNINGS=ignore
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv
timeout 100 python benchmarks/gpu/mma_probe.py 1024,1024,1024 --swap-a --passes 3,1 --variants 128x128k16w64x32,64x64k16w32x32 2>&1 | tee $OUT/mma_layout.txt
timeout 420 python benchmarks/gpu/mma_probe.py 4096,4096,4096 1500,700,900 201,3279,1089 1964,359,1207 12544,128,1152 784,512,4608 512,768,3072 8192,8192,8192 2>&1 | tee $OUT/mma_shapes.txt
