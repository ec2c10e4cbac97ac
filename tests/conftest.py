import os

# Tests stay on the CPU and quiet; the backend comes from KERAS_BACKEND.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def pytest_report_header(config):
    import keras

    return f"keras {keras.__version__}, backend: {keras.config.backend()}"
