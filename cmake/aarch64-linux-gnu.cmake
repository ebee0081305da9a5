# Cross-compiles llmpack for 64-bit ARM Linux (phones, boards) with Debian's
# g++-aarch64-linux-gnu and its arm64 libraries (dpkg --add-architecture
# arm64); the binaries and tests run here under qemu-user (scripts/check-aarch64).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-L;/usr/aarch64-linux-gnu)
# arm64 libraries from /usr/lib/aarch64-linux-gnu; headers of arch-independent
# packages (nlohmann-json, CLI11) from /usr/include and /usr/share.
set(ENV{PKG_CONFIG_LIBDIR} "/usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
# Executables link statically: they copy to a device without its glibc
# mattering, and qemu-user 7.2 on the VMs this project is built on hangs when a
# dynamically linked guest starts its first thread (a static one runs threads).
# Libraries are found as their .a archives (CMakeLists.txt, after project()); `llmpack chat` goes without
# libedit's line editing there (its archive needs termcap and libbsd beside it).
set(CMAKE_EXE_LINKER_FLAGS_INIT "-static")
set(LLMPACK_STATIC_EXECUTABLES ON)
