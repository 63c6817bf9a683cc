// A stand-in for the reference's ch.supsi.dti.isin.hashfunction.HashFunction
// interface, declaring only the method BinomialEngine calls, so that the
// engine compiles alone (the reference's interface pulls in its hash
// classes and their libraries). Written for chash's generator.
package ch.supsi.dti.isin.hashfunction;

public interface HashFunction {
    long hash(String key);
}
