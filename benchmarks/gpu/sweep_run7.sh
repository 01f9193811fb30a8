# Device run 7 (2026-11-21): tiles, K step and A layout around the best config of run 6, all
# with register double buffering. Run: . benchmarks/gpu/gpu_env.sh && bash benchmarks/gpu/sweep_run7.sh
S="python benchmarks/gpu/sweep.py"
V="--vary tile_k=[[8],[16],[32]] --vary tile_y=[[2,16,4],[1,16,8],[2,8,8],[2,32,2]] --vary tile_x=[[2,16,4],[2,8,8],[1,16,8]]"
C1='{"a_layout":"col","a_pad":4,"fetch_vec":1,"double_buffer":"local","reg_fetch":1}'
C2='{"a_layout":"row","fetch_vec":1,"double_buffer":"local","reg_fetch":1}'
$S gemm:4096,4096,4096 $V --config "$C1" --config "$C2"
