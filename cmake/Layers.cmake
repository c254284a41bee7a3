# The layers of docs/ARCHITECTURE.md, lowest first: the one ordered list that src/CMakeLists.txt
# (one static library per layer, linking only layers before it here) and
# cmake/CheckLayerIncludes.cmake (no file includes a layer after its own) follow. cpu and cuda
# are the kernel layers under ops; cuda comes after cpu because its kernels take the parameter
# structs of the reference kernels (cpu/conv2d_cpu.h, cpu/pool_cpu.h, cpu/elementwise_cpu.h).
set(EPOCH_LAYERS tensor data cpu cuda ops autograd optim nn models train bench cli)
