# Installation and the CMake package (find_package(MoEComm)); filled in with the
# exported targets of each component.
