// The source of tsum_pch_json, the target that builds the shared precompiled header (cmake/Pch.cmake).
