# Device run 4 (2026-11-21): split-K for the small-M*N shapes, around the best tiles of run 3.
# Run: . benchmarks/gpu/gpu_env.sh && bash benchmarks/gpu/sweep_run4.sh
S="python benchmarks/gpu/sweep.py"
V="--vary split_k=[1,2,4] --vary reg_fetch=[0,1] --vary tile_k=[[16],[32]]"
$S gemm:3136,256,2304 conv:1,256,56,56,256,3,3,1,1 $V \
  --config '{"tile_y":[2,8,4],"tile_x":[1,16,4],"a_layout":"row","fetch_vec":1}' \
  --config '{"tile_y":[1,16,4],"tile_x":[1,16,4],"a_layout":"row","fetch_vec":4}' \
  --config '{"tile_y":[2,16,4],"tile_x":[2,16,4],"a_layout":"row","fetch_vec":1}' \
  --config '{"tile_y":[2,8,4],"tile_x":[2,16,4],"a_layout":"row","fetch_vec":1}'
