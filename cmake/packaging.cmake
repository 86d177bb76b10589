# packaging.cmake: what `cmake --install` puts where (GNUInstallDirs), included by the root
# CMakeLists.txt after every target exists.
#   lib/libampscope-emu.a, .so     the emulator (emulate/), static and shared
#   include/ampscope/fpe.h         its whole public interface (it includes only C headers)
#   lib/pkgconfig/ampscope-emu.pc  `pkg-config --cflags --libs ampscope-emu`
#   bin/ampscope                   the program
#   share/ampscope/plots/*.gp      the gnuplot scripts of `ampscope report`
#   share/man/man1/ampscope.1      the man page, and
#   share/bash-completion/completions/ampscope   the bash completion, both generated at build
#                                  time from the built program's help texts (mkman.sh,
#                                  mkcompletion.sh), so neither can drift from it
# tests/install/install_check.sh installs into a temporary prefix and checks each of these.
include(GNUInstallDirs)

install(TARGETS ampscope_emu ampscope_emu_shared
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${PROJECT_SOURCE_DIR}/emulate/fpe.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/ampscope)

# The .pc file names its directories relative to itself (${pcfiledir}) where the install
# directories are relative, so it stays right under `cmake --install --prefix P` and DESTDIR,
# which a prefix written in at configure time would not.
set(pc_dir ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(AMPSCOPE_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH pc_up /root/${pc_dir} /root)
  string(REGEX REPLACE "/$" "" pc_up "${pc_up}")
  set(AMPSCOPE_PC_PREFIX "\${pcfiledir}/${pc_up}")
endif()
foreach(kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${kind}}")
    set(AMPSCOPE_PC_${kind} "${CMAKE_INSTALL_${kind}}")
  else()
    set(AMPSCOPE_PC_${kind} "\${prefix}/${CMAKE_INSTALL_${kind}}")
  endif()
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/emulate/ampscope-emu.pc.in
               ${PROJECT_BINARY_DIR}/ampscope-emu.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/ampscope-emu.pc DESTINATION ${pc_dir})

install(TARGETS ampscope RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

file(GLOB plot_scripts ${PROJECT_SOURCE_DIR}/plots/*.gp)
install(FILES ${plot_scripts} DESTINATION ${CMAKE_INSTALL_DATADIR}/ampscope/plots)

# The man page and the completion run the program just built: they are part of `all`, and a
# change to any help text (a relink) or to the scripts makes them again.
set(mk_dir ${PROJECT_SOURCE_DIR}/cmake)
add_custom_command(
  OUTPUT ${PROJECT_BINARY_DIR}/ampscope.1
  COMMAND sh ${mk_dir}/mkman.sh $<TARGET_FILE:ampscope> ${PROJECT_BINARY_DIR}/ampscope.1
          ${CMAKE_INSTALL_FULL_DATADIR}
  DEPENDS ampscope ${mk_dir}/mkman.sh ${mk_dir}/helptext.sh
  COMMENT "Generating ampscope.1 from ampscope's help texts")
add_custom_command(
  OUTPUT ${PROJECT_BINARY_DIR}/ampscope.bash-completion
  COMMAND sh ${mk_dir}/mkcompletion.sh $<TARGET_FILE:ampscope>
          ${PROJECT_BINARY_DIR}/ampscope.bash-completion
  DEPENDS ampscope ${mk_dir}/mkcompletion.sh ${mk_dir}/helptext.sh
  COMMENT "Generating the bash completion from ampscope's help texts")
add_custom_target(ampscope_docs ALL
  DEPENDS ${PROJECT_BINARY_DIR}/ampscope.1 ${PROJECT_BINARY_DIR}/ampscope.bash-completion)

install(FILES ${PROJECT_BINARY_DIR}/ampscope.1 DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ${PROJECT_BINARY_DIR}/ampscope.bash-completion
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions RENAME ampscope)
