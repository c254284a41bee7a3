# The layers of docs/ARCHITECTURE.md, lowest first: the one ordered list that src/CMakeLists.txt
# (one static library per layer, linking only layers before it here) and
# cmake/CheckLayerIncludes.cmake (no file includes a layer after its own) follow. kernels holds
# the argument structs both kernel layers take (header only); cpu and cuda are the kernel layers
# under ops, cuda after cpu because its headers name the CPU kernels they mirror.
set(EPOCH_LAYERS tensor kernels data cpu cuda ops dist autograd optim nn models train bench study report cli)
