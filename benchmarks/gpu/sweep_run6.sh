# Device run 6 (2026-11-21): double buffering in registers (double_buffer("local")), around the best configs of
# runs 3 and 4. Run: . benchmarks/gpu/gpu_env.sh && bash benchmarks/gpu/sweep_run6.sh
S="python benchmarks/gpu/sweep.py"
V="--vary double_buffer=[\"none\",\"local\"] --vary reg_fetch=[0,1] --vary fetch_vec=[1,4]"
BIG="--config {\"tile_y\":[1,16,8],\"tile_x\":[2,16,4],\"a_layout\":\"row\",\"fetch_vec\":1,\"tile_k\":[32]}
 --config {\"tile_y\":[2,16,4],\"tile_x\":[2,16,4],\"a_layout\":\"row\",\"fetch_vec\":1,\"tile_k\":[32]}
 --config {\"tile_y\":[2,16,4],\"tile_x\":[2,16,4],\"a_layout\":\"col\",\"a_pad\":4,\"fetch_vec\":1,\"tile_k\":[16]}
 --config {\"tile_y\":[2,16,4],\"tile_x\":[2,8,8],\"a_layout\":\"row\",\"fetch_vec\":1,\"tile_k\":[16]}"
$S gemm:4096,4096,4096 gemm:8192,8192,8192 $V $BIG
$S gemm:3136,256,2304 conv:1,256,56,56,256,3,3,1,1 $V --vary tile_k=[[16],[32]] \
  --config '{"tile_y":[2,8,4],"tile_x":[2,16,4],"a_layout":"row","fetch_vec":1,"split_k":4}' \
  --config '{"tile_y":[2,8,4],"tile_x":[1,16,4],"a_layout":"row","fetch_vec":1,"split_k":4}'
