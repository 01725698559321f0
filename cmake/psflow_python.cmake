# The Python package `psflow` (python/): a pybind11 extension over the
# public C++ API, built when Debian's pybind11-dev, python3-dev and
# python3-numpy are present. Off by default in the clang sanitizer and fuzz
# builds: an instrumented extension would need the sanitizer runtime
# preloaded into the interpreter.
#
# Debian's interpreter (/usr/bin/python3) is the one the Debian packages
# (numpy, pytest, torch) are installed for; another python3 earlier on
# PATH (pyenv, a venv) is used only when named with -DPython3_EXECUTABLE.
if(NOT DEFINED Python3_EXECUTABLE AND EXISTS /usr/bin/python3)
  set(Python3_EXECUTABLE /usr/bin/python3 CACHE FILEPATH "The interpreter psflow's extension is for")
endif()
set(psflow_python_default OFF)
if(NOT PSFLOW_SANITIZE AND NOT PSFLOW_FUZZ)
  find_package(Python3 COMPONENTS Interpreter Development.Module NumPy QUIET)
  find_package(pybind11 CONFIG QUIET)
  if(Python3_FOUND AND Python3_NumPy_FOUND AND pybind11_FOUND)
    set(psflow_python_default ON)
  endif()
endif()
option(PSFLOW_PYTHON "Build the Python package psflow (python/)" ${psflow_python_default})
if(PSFLOW_PYTHON)
  find_package(Python3 COMPONENTS Interpreter Development.Module NumPy REQUIRED)
  find_package(pybind11 CONFIG REQUIRED)
endif()
