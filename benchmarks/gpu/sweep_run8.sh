# Device run 8 (2026-11-21): double_buffer("both") (registers + two __local copies, one barrier
# per K step) against "local", at the best tiles of run 7.
# Run: . benchmarks/gpu/gpu_env.sh && bash benchmarks/gpu/sweep_run8.sh
S="python benchmarks/gpu/sweep.py"
V="--vary double_buffer=[\"local\",\"both\"] --vary tile_k=[[4],[8],[16]] --vary reg_fetch=[0,1] --vary tile_y=[[1,16,8],[2,16,4]]"
$S gemm:4096,4096,4096 gemm:8192,8192,8192 $V \
  --config '{"tile_x":[2,16,4],"a_layout":"col","a_pad":4,"fetch_vec":1}'
