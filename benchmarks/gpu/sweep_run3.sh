# Device run 3 (2026-11-21): register fetch, K step, A layout and fetch width around the best
# tiles of the earlier sweeps. Run: . benchmarks/gpu/gpu_env.sh && bash benchmarks/gpu/sweep_run3.sh
S="python benchmarks/gpu/sweep.py"
V="--vary reg_fetch=[0,1] --vary tile_k=[[16],[32]] --vary fetch_vec=[1,4]"
$S gemm:4096,4096,4096 $V --vary 'a_layout=["col","row"]' \
  --config '{"tile_y":[2,16,4],"tile_x":[2,16,4],"a_pad":4}' \
  --config '{"tile_y":[2,16,4],"tile_x":[2,16,4]}' \
  --config '{"tile_y":[1,16,8],"tile_x":[2,16,4]}' \
  --config '{"tile_y":[2,16,4],"tile_x":[2,8,8]}'
$S gemm:3136,256,2304 conv:1,256,56,56,256,3,3,1,1 $V --vary 'a_layout=["col","row"]' \
  --config '{"tile_y":[1,8,4],"tile_x":[1,8,4]}' --config '{"tile_y":[2,8,4],"tile_x":[2,8,4]}' \
  --config '{"tile_y":[1,16,4],"tile_x":[1,16,4]}' --config '{"tile_y":[2,8,4],"tile_x":[1,16,4]}'
$S gemm:8192,8192,8192 --vary reg_fetch=[0,1] --vary fetch_vec=[1,4] \
  --config '{"tile_y":[2,16,4],"tile_x":[2,16,4],"a_pad":4,"tile_k":[16]}' \
  --config '{"tile_y":[1,16,8],"tile_x":[2,16,4],"tile_k":[16]}'
