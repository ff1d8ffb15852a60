"""Package names imported on first use (PEP 562), so that `import bert_flow_tf` and the commands' flag modules load
no TensorFlow: `__getattr__ = lazy.names(__name__, _PUBLIC)` in a package's __init__.py."""
import importlib

from bert_flow_tf.utils import logs


def names(package, public):
  """A module `__getattr__` for `package` (str) that imports `public`'s names on first use.

  Args:
    package: str, the package's name (for the AttributeError).
    public: dict name -> the module that defines it; a name that is its module's last part is that module.

  Returns:
    function name -> the attribute; TensorFlow's C++ start-up notes stay off stderr while it imports
    (logs.tensorflow_startup).
  """
  def __getattr__(name):  # pylint: disable=invalid-name
    if name not in public:
      raise AttributeError(f"module {package!r} has no attribute {name!r}")
    with logs.tensorflow_startup(verbose=False):
      module = importlib.import_module(public[name])
    return module if public[name].endswith(f".{name}") else getattr(module, name)
  return __getattr__
